package dev.polystack.host.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.ProcessEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The perf engine against the real kernel: per-CPU events whose samples of chosen processes
 * reach the listener as tick records, a followed process's child chosen at its fork (before its
 * first tick is read), its exec and exit as events, and nothing of processes not chosen.
 */
class PerfEngineTest {
  private static final int RATE = 199;

  /** What the listener was handed. */
  private static final class Seen implements CaptureEngine.Listener {
    final Map<Integer, Integer> ticksByTgid = new HashMap<>();
    final List<ProcessEvent> events = new ArrayList<>();
    final List<CaptureRecord> records = new ArrayList<>();
    int malformed;

    @Override
    public void tick(CaptureRecord record) {
      ticksByTgid.merge(record.tgid(), 1, Integer::sum);
      if (records.size() < 50) {
        records.add(record);
      }
    }

    @Override
    public void event(ProcessEvent event) {
      events.add(event);
    }

    @Override
    public void malformed() {
      malformed++;
    }

    int child(int parent) {
      return events.stream().filter(e -> e.kind() == ProcessEvent.Kind.FORK
          && e.parent() == parent).mapToInt(ProcessEvent::tgid).findFirst().orElse(0);
    }

    boolean event(ProcessEvent.Kind kind, int tgid) {
      return events.stream().anyMatch(e -> e.kind() == kind && e.tgid() == tgid);
    }
  }

  @Test
  void aFollowedProcessesChildIsSampledFromItsForkWithExecAndExitEvents() throws Exception {
    PerfEngine engine = new PerfEngine(RATE, 4096, false, false);
    assertEquals(Optional.empty(), engine.check());
    // Not chosen: busy the whole time, so its samples would show if they were let through.
    Process bystander = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
    // The parent waits on stdin, then forks a child that is busy, then execs a busy program.
    Process parent = new ProcessBuilder("sh", "-c", "read line; sh -c 'i=0; while [ $i -lt"
        + " 300000 ]; do i=$((i+1)); done; exec sh -c \"i=0; while [ \\$i -lt 300000 ]; do"
        + " i=\\$((i+1)); done\"' & wait").start();
    int pid = (int) parent.pid();
    Seen seen = new Seen();
    try (engine) {
      engine.select(pid, true);
      engine.start();
      parent.getOutputStream().write('\n');
      parent.getOutputStream().flush();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      int child = 0;
      while (System.nanoTime() < deadline) {
        engine.poll(100, seen);
        child = seen.child(pid);
        if (child != 0 && seen.event(ProcessEvent.Kind.EXIT, child)) {
          break;
        }
      }
      assertTrue(parent.waitFor(60, TimeUnit.SECONDS));
      engine.poll(0, seen);
      assertTrue(child != 0, "no fork event: " + seen.events);
      assertTrue(seen.ticksByTgid.getOrDefault(child, 0) > 0,
          "the child was never sampled: " + seen.ticksByTgid);
      assertTrue(seen.event(ProcessEvent.Kind.EXEC, child), "no exec event: " + seen.events);
      assertTrue(seen.event(ProcessEvent.Kind.EXIT, child), "no exit event: " + seen.events);
      assertFalse(seen.ticksByTgid.containsKey((int) bystander.pid()),
          "a process not chosen was sampled");
      assertFalse(seen.ticksByTgid.containsKey((int) ProcessHandle.current().pid()));
      for (CaptureRecord r : seen.records) {
        assertEquals(r.regs()[dev.polystack.plugin.api.Register.RSP.ordinal()], r.stackStart());
        assertTrue(r.stack().length > 0 && r.stack().length <= 4096, "stack " + r.stack().length);
        assertEquals(0, r.planStops().length);
      }
      assertEquals(0, seen.malformed);
      Map<String, Long> counters = engine.counters();
      assertEquals(counters.get("ticks"), counters.get("records") + counters.getOrDefault(
          "perf_no_user_regs", 0L), counters.toString());
    } finally {
      bystander.destroyForcibly().waitFor();
      parent.destroyForcibly().waitFor();
    }
  }

  @Test
  void aProcessDeselectedIsNoLongerSampled() throws Exception {
    Process busy = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
    int pid = (int) busy.pid();
    Seen seen = new Seen();
    try (PerfEngine engine = new PerfEngine(RATE, 4096, false, false)) {
      engine.select(pid, false);
      engine.start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!seen.ticksByTgid.containsKey(pid) && System.nanoTime() < deadline) {
        engine.poll(100, seen);
      }
      assertTrue(seen.ticksByTgid.containsKey(pid), "never sampled");
      engine.deselect(pid);
      engine.poll(0, seen); // what was in the rings before
      int before = seen.ticksByTgid.get(pid);
      long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
      while (System.nanoTime() < until) {
        engine.poll(50, seen);
      }
      assertEquals(before, seen.ticksByTgid.get(pid));
    } finally {
      busy.destroyForcibly().waitFor();
    }
  }
}
