package dev.polystack.host.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.ptrace.PtraceConstants;
import dev.polystack.host.ptrace.Registers;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.testutil.TestTarget;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LauncherTest {

  @Test
  void exitCodeOfShellWithInheritedStdio() throws Exception {
    try (ChildProcess p = Launcher.command("sh", "-c", "echo hi >&2; exit 3").start()) {
      WaitStatus st = p.waitFor(Duration.ofSeconds(5));
      assertTrue(st.exited());
      assertEquals(3, st.exitCode());
    }
  }

  @Test
  void stdoutRedirectAndEnvironment(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("out");
    try (ChildProcess p =
        Launcher.command("sh", "-c", "echo hello \"$HOME\"").stdout(out).start()) {
      assertEquals(0, p.waitFor(Duration.ofSeconds(5)).exitCode());
    }
    assertEquals("hello " + System.getenv("HOME"), Files.readString(out).trim());
  }

  @Test
  void missingExecutableIsEnoent() {
    SyscallException e =
        assertThrows(
            SyscallException.class, () -> Launcher.command("/nonexistent/polystack-x").start());
    assertEquals(Errno.ENOENT, e.errno());
  }

  @Test
  void startStoppedThenTraceToExec(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("out");
    String exe = TestTarget.binary().toString();
    // Its stop file exists already: once released, the program runs straight to its end.
    Path stop = Files.createFile(dir.resolve("stop"));
    try (ChildProcess p =
        Launcher.command(exe, "loop", stop.toString()).stdout(out).startStopped(true).start()) {
      assertEquals('T', TestTarget.state(p.pid()));
      try (Tracer tracer = Tracer.start(p.pid())) {
        p.seizeAndRunToExec(tracer, PtraceConstants.DEFAULT_OPTIONS, Duration.ofSeconds(5));
        assertEquals(exe, Files.readSymbolicLink(Path.of("/proc/" + p.pid() + "/exe")).toString());
        Registers r = tracer.getRegs(p.pid());
        assertTrue(r.rip() != 0);
        // Nothing of the program has run yet.
        assertTrue(!Files.exists(out) || Files.size(out) == 0);
      }
      WaitStatus st = p.waitFor(Duration.ofSeconds(10));
      assertEquals(7, st.exitCode(), st.toString());
      assertTrue(Files.readString(out).contains("done"));
    }
  }
}
