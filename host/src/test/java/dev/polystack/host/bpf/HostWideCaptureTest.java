package dev.polystack.host.bpf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The capture program's host-wide mode and process events against the real kernel: a process
 * nobody added is captured, kernel threads and polystack are not, exec and exit come as events,
 * and a followed process's child is a target from its fork.
 */
class HostWideCaptureTest {
  private static final int RATE = 199;

  @BeforeAll
  static void bpfAvailable() {
    String disabled = System.getenv(BpfSupport.DISABLE_ENV);
    assumeTrue(disabled == null || disabled.isEmpty(), "BPF disabled by the environment");
    assertEquals(Optional.empty(), BpfSupport.unavailableReason());
  }

  /** What the ring held while the test waited. */
  private static final class Seen {
    final Set<Integer> tickTgids = new HashSet<>();
    final List<ProcessEvent> events = new ArrayList<>();
    int malformed;

    void read(TickCapture capture, int millis) {
      capture.poll(millis, bytes -> {
        try {
          if (ProcessEvent.isEvent(bytes)) {
            events.add(ProcessEvent.parse(bytes));
          } else {
            tickTgids.add(CaptureRecord.parse(bytes).tgid());
          }
        } catch (IllegalArgumentException e) {
          malformed++;
        }
      });
    }

    boolean event(ProcessEvent.Kind kind, long tgid) {
      return events.stream().anyMatch(e -> e.kind() == kind && e.tgid() == tgid);
    }
  }

  @Test
  void everyUserProcessButPolystackIsCapturedWithExecAndExitEvents() throws Exception {
    int self = (int) ProcessHandle.current().pid();
    try (TickCapture capture = TickCapture.open(RATE, 1 << 22)) {
      capture.configure(new TickCapture.Settings(true, self, 4096, true, false));
      // Busy in the shell for a while, then exec'ing into a busy program: both never added.
      Process p = new ProcessBuilder("sh", "-c",
          "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sh -c 'while :; do :; done'")
          .start();
      int pid = (int) p.pid();
      Seen seen = new Seen();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!(seen.tickTgids.contains(pid) && seen.event(ProcessEvent.Kind.EXEC, pid))
          && System.nanoTime() < deadline) {
        seen.read(capture, 100);
      }
      p.destroyForcibly().waitFor();
      while (!seen.event(ProcessEvent.Kind.EXIT, pid) && System.nanoTime() < deadline) {
        seen.read(capture, 100);
      }
      assertTrue(seen.tickTgids.contains(pid), "no tick of the process");
      assertTrue(seen.event(ProcessEvent.Kind.EXEC, pid), "no exec event: " + seen.events);
      assertTrue(seen.event(ProcessEvent.Kind.EXIT, pid), "no exit event: " + seen.events);
      assertFalse(seen.tickTgids.contains(self), "polystack captured itself");
      for (int tgid : seen.tickTgids) {
        assertFalse(kernelThread(tgid), "kernel thread " + tgid + " captured");
      }
      assertEquals(0, seen.malformed);
      assertTrue(capture.counters().get("events") >= 2, capture.counters().toString());
    }
  }

  /**
   * Host-wide the reader sleeps until the ring is a quarter full, except for a program's first
   * tick: a program exec'd while the reader waits in a 20 s poll is handed over at its first
   * tick, while it runs. Its exec alone does not wake the reader (most programs never tick).
   */
  @Test
  void aNewProgramsFirstTickWakesTheReader() throws Exception {
    int self = (int) ProcessHandle.current().pid();
    // 49 Hz into 16 MiB: the ring is a quarter full (the other wake-up) after about 20 s.
    try (TickCapture capture = TickCapture.open(49, 1 << 24)) {
      capture.configure(new TickCapture.Settings(true, self, 4096, true, false));
      Process p = new ProcessBuilder("sh", "-c", "sleep 1; exec sh -c 'while :; do :; done'")
          .start();
      int pid = (int) p.pid();
      try {
        // Ticks carry CLOCK_MONOTONIC, as System.nanoTime() on Linux: a tick of the process
        // after 0.9 s is the spinning program's (the shell waits for sleep until then).
        long start = System.nanoTime();
        long spinning = start + TimeUnit.MILLISECONDS.toNanos(900);
        long deadline = start + TimeUnit.SECONDS.toNanos(60);
        long[] firstSpinTick = {0};
        while (firstSpinTick[0] == 0 && System.nanoTime() < deadline) {
          capture.poll(20_000, bytes -> {
            if (!ProcessEvent.isEvent(bytes)) {
              CaptureRecord r = CaptureRecord.parse(bytes);
              if (r.tgid() == pid && r.monotonicNanos() > spinning && firstSpinTick[0] == 0) {
                firstSpinTick[0] = r.monotonicNanos();
              }
            }
          });
        }
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(firstSpinTick[0] != 0, "no tick of the spinning program");
        assertTrue(millis < 10_000, "the spinning program's ticks came " + millis
            + " ms after the start (its first tick did not wake the reader)");
      } finally {
        p.destroyForcibly().waitFor();
      }
    }
  }

  @Test
  void aFollowedTargetsChildIsATargetFromItsFork() throws Exception {
    try (TickCapture capture = TickCapture.open(RATE, 1 << 22)) {
      capture.configure(new TickCapture.Settings(false, 0, 4096, true, false));
      // The parent waits on stdin before forking a busy child: it is a target by then.
      Process parent = new ProcessBuilder("sh", "-c",
          "read line; sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' & wait")
          .start();
      int pid = (int) parent.pid();
      capture.addTarget(pid, 4096, true);
      parent.getOutputStream().write('\n');
      parent.getOutputStream().flush();
      Seen seen = new Seen();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      int child = 0;
      while (System.nanoTime() < deadline) {
        seen.read(capture, 100);
        child = seen.events.stream().filter(e -> e.kind() == ProcessEvent.Kind.FORK
            && e.parent() == pid).mapToInt(ProcessEvent::tgid).findFirst().orElse(0);
        if (child != 0 && seen.tickTgids.contains(child)) {
          break;
        }
      }
      parent.destroyForcibly().waitFor();
      assertTrue(child != 0, "no fork event: " + seen.events);
      assertTrue(seen.tickTgids.contains(child), "the child was never captured");
      assertTrue(capture.counters().get("followed") >= 1, capture.counters().toString());
    }
  }

  /**
   * A cgroup narrows the host-wide capture at each tick: a busy process outside it is not
   * captured until it is moved in, with no exec and nothing asked of polystack.
   */
  @Test
  void aProcessMovedIntoTheCgroupIsCapturedFromItsNextTick() throws Exception {
    Path mount = dev.polystack.host.pipeline.CgroupV2.mount();
    Path dir = mount.resolve("polystack-test-" + ProcessHandle.current().pid());
    Files.createDirectories(dir);
    Process busy = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
    int pid = (int) busy.pid();
    try (TickCapture capture = TickCapture.open(RATE, 1 << 22)) {
      long id = ((Number) Files.getAttribute(dir, "unix:ino")).longValue();
      capture.configure(new TickCapture.Settings(true, (int) ProcessHandle.current().pid(), 4096,
          true, false, new TickCapture.Cgroup(id, 1)));
      Seen before = new Seen();
      long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
      while (System.nanoTime() < until) {
        before.read(capture, 50);
      }
      assertFalse(before.tickTgids.contains(pid), "captured outside the cgroup");
      assertTrue(before.tickTgids.isEmpty(), "captured outside the cgroup: " + before.tickTgids);
      Files.writeString(dir.resolve("cgroup.procs"), Integer.toString(pid));
      Seen after = new Seen();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!after.tickTgids.contains(pid) && System.nanoTime() < deadline) {
        after.read(capture, 100);
      }
      assertTrue(after.tickTgids.contains(pid), "not captured once moved into the cgroup");
      assertEquals(java.util.Set.of(pid), after.tickTgids);
    } finally {
      busy.destroyForcibly().waitFor();
      // Empty once its one process is released, which the kernel finishes after the reap.
      for (int i = 0; i < 100 && Files.exists(dir); i++) {
        try {
          Files.delete(dir);
        } catch (java.io.IOException e) {
          Thread.sleep(20);
        }
      }
    }
  }

  @Test
  void malformedEventsAreRefused() {
    ByteBuffer b = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
    b.putShort(0, (short) 2).putShort(2, (short) 32).putInt(4, 32).putInt(8, 5).putInt(12, 5)
        .putInt(24, 9);
    assertTrue(ProcessEvent.isEvent(b));
    assertThrowsIllegal(b); // kind 9
    b.putInt(24, 1).putInt(8, 0);
    assertThrowsIllegal(b); // pid 0
    b.putInt(8, 5).putInt(4, 64);
    assertThrowsIllegal(b); // size past the record
    b.putInt(4, 32);
    assertEquals(ProcessEvent.Kind.EXEC, ProcessEvent.parse(b).kind());
    assertThrowsIllegal(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putShort(0,
        (short) 2));
  }

  private static void assertThrowsIllegal(ByteBuffer b) {
    try {
      ProcessEvent.parse(b);
    } catch (IllegalArgumentException e) {
      return;
    }
    throw new AssertionError("accepted a malformed event");
  }

  private static boolean kernelThread(int pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      long flags = Long.parseLong(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[6]);
      return (flags & 0x00200000L) != 0;
    } catch (java.io.IOException | RuntimeException e) {
      return false; // gone: a user process that exited (kernel threads stay)
    }
  }
}
