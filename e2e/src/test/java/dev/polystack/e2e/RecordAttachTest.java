package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code polystack record --pid} on a workload the test started: polystack must let go of the
 * target cleanly however the record ends (duration, SIGINT, SIGTERM, SIGHUP), leaving it running
 * untraced and unstopped, to exit later on its own with its own exit code.
 */
class RecordAttachTest {

  @TempDir Path dir;

  @ParameterizedTest(name = "--mode {0}")
  @ValueSource(strings = {"ptrace", "bpf"})
  void attachForTwoSecondsThenLetTheTargetRunToItsOwnExit(String mode) throws Exception {
    Path out = dir.resolve("attach.folded");
    try (Target target = Target.start(Workloads.binary("two_threads"), "stdin", "7")) {
      var result = Distribution.run("record", "--mode", mode, "--pid",
          Integer.toString(target.pid()), "--duration", "2s", "--format", "folded", "-o",
          out.toString());

      RecordLaunchTest.assertSucceeded(result, out);
      assertTrue(result.stderr().contains(mode.equals("ptrace")
          ? "polystack: done; target detached and still running"
          : "polystack: done; target still running"), result.stderr());
      assertEquals(2, RecordLaunchTest.threads(result), result.stderr());
      Map<String, Long> stacks = Tools.folded(out);
      assertTrue(stacks.keySet().stream().anyMatch(s -> s.endsWith(";main;top_a;mid_a;leaf_a")),
          stacks.keySet() + "\n" + result.stderr());
      assertTrue(stacks.keySet().stream().anyMatch(s -> s.endsWith(";worker;top_b;mid_b;leaf_b")),
          stacks.keySet() + "\n" + result.stderr());
      // ~2 s at 99 Hz on 2 threads is ~400; a VM shared with other work may fall far behind
      // (late ticks), but not to almost nothing.
      assertTrue(Tools.total(stacks) >= 20, "samples: " + Tools.total(stacks) + "\n"
          + result.stderr());

      assertReleasedAndRunning(target);
      assertStillComputing(target);
      target.stdin().close();
      assertEquals(7, target.awaitExit(30), "the target's own exit code");
      assertTrue(target.output().contains("done"), target.output());
    }
  }

  /**
   * A record with no --duration ends on SIGINT, SIGTERM or SIGHUP to polystack: it detaches,
   * writes what it has and exits 0 within seconds; the target runs on and exits on its own.
   */
  @ParameterizedTest(name = "--mode {0}, SIG{1}")
  @CsvSource({"ptrace, INT", "ptrace, TERM", "ptrace, HUP", "bpf, INT", "bpf, TERM"})
  void aStopSignalEndsAnAttachedRecordAndTheTargetRunsOn(String mode, String signal)
      throws Exception {
    Path out = dir.resolve("signal.folded");
    try (Target target = Target.start(Workloads.binary("two_threads"), "stdin");
        Distribution.Running polystack = Distribution.start("record", "--mode", mode, "--pid",
            Integer.toString(target.pid()), "--format", "folded", "-o", out.toString())) {
      awaitSampling(mode, target, polystack); // JVM start-up on a loaded host can take long
      // Some samples: the ticks come with the target's CPU time (~20 a thread at 99 Hz).
      Awaits.cpuTicks(target.pid(), 40, 60_000);

      long sent = System.nanoTime();
      polystack.signal(signal);
      var result = polystack.await(20);
      double seconds = (System.nanoTime() - sent) / 1e9;

      // Typically ~0.5 s; the margin is for a VM shared with other work.
      assertTrue(seconds < 8, "polystack took " + seconds + " s to stop after SIG" + signal);
      RecordLaunchTest.assertSucceeded(result, out);
      assertTrue(result.stderr().contains(mode.equals("ptrace")
          ? "polystack: stopped; target detached and still running"
          : "polystack: stopped; target still running"), result.stderr());
      assertTrue(Tools.total(Tools.folded(out)) > 0, "no samples in " + out);

      assertReleasedAndRunning(target);
      assertStillComputing(target);
      target.stdin().close();
      assertEquals(0, target.awaitExit(30), target.output());
      assertTrue(target.output().contains("done"), target.output());
    }
  }

  /**
   * A polystack started in the background of a script inherits SIGINT ignored (and, under
   * nohup, SIGHUP); {@code kill -INT} still stops it, as it stops perf and py-spy.
   */
  @Test
  void sigintStopsARecordThatInheritedItIgnored() throws Exception {
    Path out = dir.resolve("background.folded");
    try (Target target = Target.start(Workloads.binary("two_threads"), "stdin");
        Distribution.Running polystack = Distribution.startWith("--ignore-signal=INT,HUP",
            "record", "--mode", "ptrace", "--pid", Integer.toString(target.pid()), "--format",
            "folded", "-o", out.toString())) {
      awaitSampling("ptrace", target, polystack);
      Awaits.cpuTicks(target.pid(), 40, 60_000);

      polystack.signal("INT");
      var result = polystack.await(20);

      RecordLaunchTest.assertSucceeded(result, out);
      assertTrue(result.stderr().contains("polystack: stopped; target detached and still"
          + " running"), result.stderr());
      assertTrue(Tools.total(Tools.folded(out)) > 0, "no samples in " + out);
      assertReleasedAndRunning(target);
      target.stdin().close();
      assertEquals(0, target.awaitExit(30), target.output());
    }
  }

  /** ptrace mode: the target has a tracer; bpf mode: polystack holds its per-CPU events. */
  static void awaitSampling(String mode, Target target, Distribution.Running polystack)
      throws Exception {
    if (mode.equals("ptrace")) {
      target.awaitTraced(60_000);
      return;
    }
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!Reliability.holdsPerfEvents(polystack.pid()) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertTrue(Reliability.holdsPerfEvents(polystack.pid()), polystack.stderrSoFar());
  }

  /** The busy threads keep using CPU after polystack has gone: nothing was left stopped. */
  static void assertStillComputing(Target target) throws Exception {
    long before = target.cpuTicks();
    Awaits.until("CPU time used after detach (status " + target.status() + ")", 10_000,
        () -> target.cpuTicks() > before);
  }

  /** Still alive, not traced (TracerPid 0) and not left stopped (State t or T). */
  static void assertReleasedAndRunning(Target target) throws Exception {
    assertTrue(target.isAlive(), "the target must outlive polystack: " + target.output());
    Target.Status status = target.status();
    assertNotNull(status, "/proc/" + target.pid() + "/status is gone");
    assertEquals(0, status.tracerPid(), "still traced: " + status);
    assertFalse(status.stopped(), "left stopped: " + status);
  }
}
