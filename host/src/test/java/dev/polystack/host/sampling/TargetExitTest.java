package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.testutil.PidReuse;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A target's exit is noticed even when another user's process takes its pid at once (the attack
 * of docs/reliability.md, "Root safety: other users' processes"). Run as root.
 */
class TargetExitTest {
  private final ProcFs proc = ProcFs.system();

  @Test
  void aPidTakenOverByAnotherUserIsNotTheTarget() throws Exception {
    Process target = new ProcessBuilder("sleep", "600").start();
    int pid = (int) target.pid();
    ProcessIdentity identity = ProcessIdentity.read(proc, pid).orElseThrow(); // running
    TargetExit byProc = TargetExit.ofProc(proc, pid);
    try (TargetExit byPidfd = TargetExit.watch(proc, pid, null)) {
      assertFalse(byProc.gone());
      assertFalse(byPidfd.gone());

      target.destroyForcibly();
      assertTrue(target.waitFor(30, TimeUnit.SECONDS));
      // Not within the clock tick the target started in: else /proc shows both alike (the
      // pidfd still tells them apart; docs/reliability.md names this limit).
      while (nowTicks() <= identity.startTicks()) {
        Thread.onSpinWait();
      }
      try (PidReuse attacker = PidReuse.start(pid, PidReuse.NOBODY, "sleep", "600")) {
        assertTrue(proc.forPid(pid).exists(), "the pid names the attacker's process now");
        assertTrue(byPidfd.gone(), "the pidfd reports the target's exit");
        assertTrue(byProc.gone(), "the identity differs from the target's");
      }
    }
  }

  @Test
  void watchingAProcessChosenBeforeItsPidWasReusedFails() throws Exception {
    Process chosen = new ProcessBuilder("sleep", "600").start();
    int pid = (int) chosen.pid();
    ProcessIdentity identity = ProcessIdentity.read(proc, pid).orElseThrow();
    chosen.destroyForcibly();
    assertTrue(chosen.waitFor(30, TimeUnit.SECONDS));
    // Not within the clock tick the chosen one started in: else both would look alike.
    while (nowTicks() <= identity.startTicks()) {
      Thread.onSpinWait();
    }
    try (PidReuse attacker = PidReuse.start(pid, PidReuse.NOBODY, "sleep", "600")) {
      SamplingException e = assertThrows(SamplingException.class,
          () -> TargetExit.watch(proc, pid, identity).close());
      assertTrue(e.getMessage().startsWith("process " + pid + " exited before it was attached"),
          e.getMessage());
    }
  }

  /** The start time of a process started now; it lives until read (the JVM reaps at exit). */
  private long nowTicks() throws Exception {
    Process p = new ProcessBuilder("sleep", "30").start();
    try {
      return proc.forPid((int) p.pid()).stat().startTime();
    } finally {
      p.destroyForcibly();
      p.waitFor();
    }
  }
}
