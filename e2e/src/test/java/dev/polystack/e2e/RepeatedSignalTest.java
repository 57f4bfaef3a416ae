package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A user who presses Ctrl-C again while polystack detaches: the first SIGINT asks for a stop;
 * the next ones (here SIGINT, SIGINT, SIGTERM within a millisecond, from one shell) must not end
 * the JVM before every breakpoint is disarmed and every thread detached. Before, the second took
 * the JVM's default exit, and with {@code vdso --backend ptrace} that kills polystack while
 * armed, so the target dies of SIGTRAP. polystack must say "detaching, please wait" once, exit
 * 0, and the target run on unharmed.
 */
class RepeatedSignalTest {
  private static final String DETACHING = "polystack: detaching, please wait";

  @TempDir Path dir;

  @Test
  void vdsoPtraceIgnoresFurtherSignalsUntilDisarmed() throws Exception {
    try (Target target = Target.start(Workloads.binary("vdso_survivor"))) {
      target.awaitOutput("ready", 20_000);
      try (Distribution.Running polystack = Distribution.start(
          "vdso", "--pid", Integer.toString(target.pid()), "--backend", "ptrace",
          "--summary-only", "-o", dir.resolve("vdso.txt").toString())) {
        awaitArmed(target, polystack);
        // The target runs armed (its threads stop on breakpoints all the time) for 0.2 s of CPU.
        Awaits.cpuTicks(target.pid(), 20, 60_000);
        var result = burst(polystack);
        assertDetachedOnce(result);
      }
      assertTargetRunsOnAndExitsCleanly(target, "vdso_survivor ok rounds=");
      // ptrace suppresses the VM's spurious breakpoint traps too (vdso_survivor.c counts them).
      assertTrue(target.output().contains(" sigtrap_brkpt=0"), target.output());
    }
  }

  @Test
  void recordPtraceIgnoresFurtherSignalsUntilDetached() throws Exception {
    try (Target target = Target.start(Workloads.binary("survivor"))) {
      target.awaitOutput("ready", 20_000);
      try (Distribution.Running polystack = Distribution.start("record", "--mode", "ptrace",
          "--pid", Integer.toString(target.pid()), "--format", "folded", "-o",
          dir.resolve("record.folded").toString())) {
        target.awaitTraced(60_000);
        // 0.2 s of the target's CPU under sampling: about 20 stops at 99 Hz.
        Awaits.cpuTicks(target.pid(), 20, 60_000);
        var result = burst(polystack);
        assertDetachedOnce(result);
      }
      assertTargetRunsOnAndExitsCleanly(target, "survivor ok checksum=");
    }
  }

  /** Breakpoints armed: polystack holds perf_event descriptors and traces the target. */
  private static void awaitArmed(Target target, Distribution.Running polystack)
      throws Exception {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (System.nanoTime() < deadline) {
      Target.Status s = target.status();
      if (Reliability.holdsPerfEvents(polystack.pid()) && s != null && s.tracerPid() != 0) {
        return;
      }
      Thread.sleep(20);
    }
    throw new AssertionError("not armed within 60 s: " + polystack.stderrSoFar());
  }

  /** SIGINT, SIGINT, SIGTERM back to back (one shell, no pause), then polystack's exit. */
  private static Distribution.Result burst(Distribution.Running polystack) throws Exception {
    String pid = Long.toString(polystack.pid());
    Process kill = new ProcessBuilder("sh", "-c",
        "kill -INT " + pid + "; kill -INT " + pid + "; kill -TERM " + pid)
        .redirectErrorStream(true).start();
    String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0, output);
    return polystack.await(60);
  }

  private static void assertDetachedOnce(Distribution.Result result) {
    assertEquals(0, result.exitCode(), "a normal exit after a stop request: " + result.stderr());
    List<String> said = result.stderrLines().stream().filter(DETACHING::equals).toList();
    assertEquals(1, said.size(), "'" + DETACHING + "' once: " + result.stderr());
  }

  private static void assertTargetRunsOnAndExitsCleanly(Target target, String okLine)
      throws Exception {
    assertEquals(List.of(), KillTrials.stoppedAfterRelease(target.pid()), "threads left stopped");
    RecordAttachTest.assertReleasedAndRunning(target);
    long before = target.cpuTicks();
    // Let it call into the vDSO a while longer: an armed breakpoint would kill it now.
    long until = System.nanoTime() + 20_000_000_000L;
    while (target.isAlive() && target.cpuTicks() < before + VdsoKillTest.CALLING_ON_TICKS
        && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    RecordAttachTest.assertReleasedAndRunning(target);
    assertTrue(target.cpuTicks() > before, "the target stopped running: " + target.status());
    target.stdin().close();
    assertEquals(0, target.awaitExit(60), target.output());
    assertTrue(target.output().contains(okLine), target.output());
  }
}
