package dev.polystack.host.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.TaskStat;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.testutil.PidReuse;
import dev.polystack.otel.model.Sample;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * Another user's process takes the pid of a process polystack records, the moment it is free
 * (wrap-around simulated with ns_last_pid, as an attacker with many forks gets it): polystack
 * must never sample the newcomer as the target, nor its children as the target's
 * (docs/reliability.md, "Root safety: other users' processes"). perf mode; run as root.
 */
class PidReuseRecordTest {
  private static final RecordSession.Backend PERF =
      RecordSession.Backend.exactly(RecordSession.Mode.PERF);
  private final ProcFs proc = ProcFs.system();

  private static SamplingOptions options() {
    return new SamplingOptions(199, 0, false, Set.of(), SamplingOptions.DEFAULT_MAX_DEPTH,
        SamplingOptions.DEFAULT_STACK_BYTES);
  }

  private static PluginGuard guard() {
    return new PluginGuard(msg -> {});
  }

  /**
   * The target exits and its pid goes at once to nobody's busy {@code yes}: the session ends
   * with the target and records none of {@code yes}. Three trials: a check of /proc every 100 ms
   * misses such a handover most of the time, the kernel's pidfd never does.
   */
  @Test
  void aTargetWhosePidIsTakenOverEndsWithTheTarget() throws Exception {
    for (int trial = 0; trial < 3; trial++) {
      Process target = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
      int pid = (int) target.pid();
      AtomicLong samples = new AtomicLong();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Object> outcome = new AtomicReference<>();
      Thread run = new Thread(() -> {
        try {
          RecordSession session = new RecordSession(proc, new PluginLoader().load(List.of()),
              guard(), msg -> {});
          outcome.set(session.attach(pid, PERF, options(), stop::get,
              (s, e, l, t) -> samples.set(s)));
        } catch (Exception | Error e) {
          outcome.set(e);
        }
      });
      run.start();
      try {
        await(() -> samples.get() > 20 || !run.isAlive(), "the target sampled");
        target.destroyForcibly();
        assertTrue(target.waitFor(30, TimeUnit.SECONDS));
        try (PidReuse attacker = PidReuse.start(pid, PidReuse.NOBODY, "sh", "-c",
            "exec yes > /dev/null")) {
          await(() -> !run.isAlive() || cpuTicks(pid) > 50, "the session ended, or yes ran");
          stop.set(true);
          run.join(30_000);
        }
      } finally {
        stop.set(true);
        target.destroyForcibly();
        run.join(30_000);
      }
      Object o = outcome.get();
      if (o instanceof Throwable t) {
        throw new AssertionError("trial " + trial, t);
      }
      RecordSession.Result r = (RecordSession.Result) o;
      assertNotNull(r);
      List<String> threads = r.recording().samples().stream().map(Sample::threadName)
          .distinct().toList();
      assertTrue(!threads.contains("yes"), "trial " + trial + ": another user's yes sampled as"
          + " the target: threads " + threads);
      assertTrue(r.targetGone(), "trial " + trial + ": the session ended with its target");
    }
  }

  /**
   * With --subprocesses, a child of the target is found, exits, and its pid goes to nobody's
   * shell, whose child {@code yes} must not be taken for a descendant of the target.
   */
  @Test
  void aSubprocessPidTakenOverIsNoLongerARoot() throws Exception {
    // The shell runs a little between its two sleeps, so the record has samples of it.
    Process target = new ProcessBuilder("sh", "-c",
        "sleep 1; i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 600").start();
    int pid = (int) target.pid();
    RecordSession session = new RecordSession(proc, new PluginLoader().load(List.of()), guard(),
        msg -> {});
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Object> outcome = new AtomicReference<>();
    Thread run = new Thread(() -> {
      try {
        outcome.set(session.record(new MultiRecord.Targets(List.of(pid), List.of(), true),
            PERF, options(), stop::get, (s, e, l, t) -> {}, started -> { }));
      } catch (Exception | Error e) {
        outcome.set(e);
      }
    });
    run.start();
    int yes = -1;
    try {
      int child = awaitChild(pid, "sleep 1");
      await(() -> !proc.forPid(child).exists(), "the first child exited and was reaped");
      try (PidReuse attacker = PidReuse.start(child, PidReuse.NOBODY, "sh", "-c",
          "yes > /dev/null; :")) {
        yes = awaitChild(child, "yes");
        int yesPid = yes;
        // Half a second of its CPU: about 50 ticks in which it would be sampled.
        await(() -> cpuTicks(yesPid) > 50 && cpuTicks(pid) > 5, "yes and the target ran");
        stop.set(true);
        run.join(30_000);
      }
    } finally {
      stop.set(true);
      target.destroyForcibly();
      target.waitFor(30, TimeUnit.SECONDS);
      run.join(30_000);
    }
    Object o = outcome.get();
    if (o instanceof Throwable t) {
      throw new AssertionError(t);
    }
    RecordSession.Result r = (RecordSession.Result) o;
    int yesPid = yes;
    List<String> parts = r.processes().stream().map(p -> p.pid() + " " + p.name()).toList();
    assertTrue(r.processes().stream().noneMatch(p -> p.pid() == yesPid || p.name().equals("yes")),
        "another user's yes recorded as the target's subprocess: " + parts);
    assertTrue(r.processes().stream().anyMatch(p -> p.pid() == pid), parts.toString());
    assertEquals(0, r.recording().samples().stream()
        .filter(s -> s.threadName().equals("yes")).count(), parts.toString());
  }

  /** The pid of the first child of {@code parent} whose command line starts with {@code cmd}. */
  private int awaitChild(int parent, String cmd) throws Exception {
    AtomicReference<Integer> found = new AtomicReference<>();
    await(() -> {
      try (var dirs = java.nio.file.Files.list(proc.root())) {
        for (var d : dirs.toList()) {
          String name = d.getFileName().toString();
          if (!name.chars().allMatch(Character::isDigit)) {
            continue;
          }
          try {
            int p = Integer.parseInt(name);
            TaskStat st = proc.forPid(p).stat();
            if (st.ppid() == parent
                && String.join(" ", proc.forPid(p).cmdline().arguments()).startsWith(cmd)) {
              found.set(p);
              return true;
            }
          } catch (ProcReadException e) {
            // gone meanwhile
          }
        }
      } catch (java.io.IOException e) {
        return false;
      }
      return false;
    }, "a child '" + cmd + "' of " + parent);
    return found.get();
  }

  private long cpuTicks(int pid) {
    try {
      TaskStat st = proc.forPid(pid).stat();
      return st.utime() + st.stime();
    } catch (ProcReadException e) {
      return 0;
    }
  }

  /** Polls {@code condition} every 5 ms; fails after 60 s (a bound on a hang, not a timing). */
  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within 60 s: " + what);
      }
      Thread.sleep(5);
    }
  }
}
