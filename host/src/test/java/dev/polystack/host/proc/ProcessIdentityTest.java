package dev.polystack.host.proc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.testutil.PidReuse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Identity of real processes, including a pid taken over by another user's process. */
class ProcessIdentityTest {
  private final ProcFs proc = ProcFs.system();

  @Test
  void liveChildIsCurrentUntilItIsReaped() throws Exception {
    Process child = new ProcessBuilder("sleep", "600").start();
    try {
      int pid = (int) child.pid();
      ProcessIdentity identity = ProcessIdentity.read(proc, pid).orElseThrow();
      assertEquals(pid, identity.pid());
      assertEquals(proc.forPid(pid).stat().startTime(), identity.startTicks());
      assertEquals(
          Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString(),
          "pid:[" + identity.pidNamespaceInode() + "]");
      assertTrue(identity.isCurrent(proc));
      assertEquals(Optional.of(identity), ProcessIdentity.read(proc, pid));

      child.destroyForcibly();
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
      assertFalse(identity.isCurrent(proc));
      assertEquals(Optional.empty(), ProcessIdentity.read(proc, pid));
    } finally {
      child.destroyForcibly();
    }
  }

  @Test
  void aReusedPidIsAnotherProcess() throws Exception {
    Process child = new ProcessBuilder("sleep", "600").start();
    int pid = (int) child.pid();
    ProcessIdentity first = ProcessIdentity.read(proc, pid).orElseThrow();
    child.destroyForcibly();
    assertTrue(child.waitFor(30, TimeUnit.SECONDS));
    // A reuse within the same clock tick would look alike (docs/reliability.md: exits are
    // noticed through a pidfd for that reason); waiting out the tick keeps this about the rule.
    while (currentTicks() <= first.startTicks()) {
      Thread.onSpinWait();
    }
    try (PidReuse attacker = PidReuse.start(pid, PidReuse.NOBODY, "sleep", "600")) {
      ProcessIdentity second = ProcessIdentity.read(proc, pid).orElseThrow();
      assertNotEquals(first, second);
      assertTrue(second.startTicks() > first.startTicks());
      assertFalse(first.isCurrent(proc));
      assertTrue(second.isCurrent(proc));
    }
  }

  @Test
  void goneOrMalformedIsEmpty(@TempDir Path root) throws Exception {
    ProcFs prepared = ProcFs.at(root);
    Path dir = Files.createDirectories(root.resolve("42").resolve("ns"));
    String stat = "42 (a) b) c) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0"
        + " 0".repeat(20) + "\n";
    Files.writeString(root.resolve("42").resolve("stat"), stat);
    assertEquals(Optional.empty(), ProcessIdentity.read(prepared, 42)); // no ns link
    Files.createSymbolicLink(dir.resolve("pid"), Path.of("pid:[4026531836]"));
    assertEquals(
        Optional.of(new ProcessIdentity(42, 777, 4026531836L)),
        ProcessIdentity.read(prepared, 42));
    Files.delete(dir.resolve("pid"));
    Files.createSymbolicLink(dir.resolve("pid"), Path.of("pid:[-1]"));
    assertEquals(Optional.empty(), ProcessIdentity.read(prepared, 42));
    assertEquals(Optional.empty(), ProcessIdentity.read(prepared, 43));
    assertThrows(IllegalArgumentException.class, () -> new ProcessIdentity(0, 1, 1));
    assertThrows(IllegalArgumentException.class, () -> new ProcessIdentity(1, -1, 1));
  }

  /**
   * Clock ticks since boot now, as /proc/self/stat's starttime of a new process would show. The
   * process must outlive the read: the JVM reaps an exited child at once.
   */
  private long currentTicks() throws Exception {
    Process p = new ProcessBuilder("sleep", "600").start();
    try {
      return proc.forPid((int) p.pid()).stat().startTime();
    } finally {
      p.destroyForcibly();
      p.waitFor();
    }
  }
}
