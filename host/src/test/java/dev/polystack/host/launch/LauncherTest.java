package dev.polystack.host.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.ptrace.PtraceConstants;
import dev.polystack.host.ptrace.UserRegs;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.testutil.TestTarget;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LauncherTest {
  /** sleep(1)'s system call on x86-64 (coreutils sleeps with clock_nanosleep). */
  private static final int CLOCK_NANOSLEEP = 230;


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
        UserRegs r = tracer.getRegs(p.pid());
        assertTrue(r.rip() != 0);
        // Nothing of the program has run yet.
        assertTrue(!Files.exists(out) || Files.size(out) == 0);
      }
      WaitStatus st = p.waitFor(Duration.ofSeconds(10));
      assertEquals(7, st.exitCode(), st.toString());
      assertTrue(Files.readString(out).contains("done"));
    }
  }

  @Test
  void theEnvironmentWithholdsPolystackSettingsAndOtlpHeaders() {
    Map<String, String> env = new java.util.LinkedHashMap<>();
    env.put("PATH", "/usr/bin:/bin");
    env.put("HOME", "/root");
    env.put("POLYSTACK_DEBUG", "1");
    env.put("POLYSTACK_JAVA_OPTS", "-Xmx1g");
    env.put("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20secret");
    env.put("OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "x-api-key=secret");
    env.put("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317");
    env.put("OTEL_SERVICE_NAME", "app");

    assertEquals(Map.of("PATH", "/usr/bin:/bin", "HOME", "/root",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317", "OTEL_SERVICE_NAME", "app"),
        Launcher.environment(env, null));
    assertEquals(Map.of("PATH", "/usr/bin:/bin", "HOME", "/home/alice", "USER", "alice",
        "LOGNAME", "alice", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317",
        "OTEL_SERVICE_NAME", "app"),
        Launcher.environment(env, new Credentials(1000, 1000, "alice", "/home/alice")));
    assertEquals("/root", Launcher.environment(env, new Credentials(4242, 4242, "", ""))
        .get("HOME"), "a uid without a password entry keeps HOME as it is");
  }

  @Test
  void runsAsAnotherUserWithThatUsersGroupsAndEnvironment(@TempDir Path dir) throws Exception {
    Assumptions.assumeTrue(Accounts.effectiveUid() == 0, "needs root");
    Accounts.User nobody = Accounts.userByName("nobody").orElseThrow();
    Path out = dir.resolve("out");
    try (ChildProcess p = Launcher.command("sh", "-c",
            "echo $(id -u) $(id -g) $(id -G) $HOME $USER $LOGNAME")
        .runAs(Credentials.of(nobody, nobody.gid())).stdout(out).start()) {
      assertEquals(0, p.waitFor(Duration.ofSeconds(10)).exitCode());
    }
    assertEquals(nobody.uid() + " " + nobody.gid() + " " + nobody.gid() + " " + nobody.home()
        + " nobody nobody", Files.readString(out).trim());
  }

  @Test
  void startsStoppedAsAnotherUserAndTracesToExec() throws Exception {
    Assumptions.assumeTrue(Accounts.effectiveUid() == 0, "needs root");
    // A system binary: the tests' own sit in directories only root may enter.
    String exe = Path.of("/bin/sleep").toRealPath().toString();
    Accounts.User nobody = Accounts.userByName("nobody").orElseThrow();
    try (ChildProcess p = Launcher.command("/bin/sleep", "0.2").startStopped(true)
        .runAs(Credentials.of(nobody, nobody.gid())).killedWithPolystack().start()) {
      assertEquals('T', TestTarget.state(p.pid()));
      try (Tracer tracer = Tracer.start(p.pid())) {
        p.seizeAndRunToExec(tracer, PtraceConstants.DEFAULT_OPTIONS, Duration.ofSeconds(5));
        assertEquals(exe, Files.readSymbolicLink(Path.of("/proc/" + p.pid() + "/exe")).toString());
        List<String> ids = Files.readAllLines(Path.of("/proc/" + p.pid() + "/status")).stream()
            .filter(l -> l.startsWith("Uid:") || l.startsWith("Gid:")).toList();
        String u = Integer.toString(nobody.uid());
        String g = Integer.toString(nobody.gid());
        assertEquals(List.of("Uid:\t" + String.join("\t", u, u, u, u),
            "Gid:\t" + String.join("\t", g, g, g, g)), ids);
      }
      WaitStatus st = p.waitFor(Duration.ofSeconds(10));
      assertEquals(0, st.exitCode(), st.toString());
    }
  }

  /**
   * PR_SET_PDEATHSIG is tied to the thread that started the child: when it ends, the child gets
   * SIGKILL, as it does when polystack dies. (Which is why sessions start their command on the
   * command's own thread.)
   */
  @Test
  void aCommandKilledWithPolystackDiesWithTheThreadThatStartedIt() throws Exception {
    AtomicReference<ChildProcess> started = new AtomicReference<>();
    AtomicReference<Exception> failed = new AtomicReference<>();
    Path sleep = Path.of("/bin/sleep").toRealPath();
    Thread starter = new Thread(() -> {
      try {
        ChildProcess child = Launcher.command("sleep", "60").killedWithPolystack().start();
        started.set(child);
        // start() returns once setpriv runs; it arms the signal just before it execs sleep.
        Path exe = Path.of("/proc/" + child.pid() + "/exe");
        for (int i = 0; i < 500 && !sleep.equals(exe.toRealPath()); i++) {
          Thread.sleep(10);
        }
      } catch (Exception e) {
        failed.set(e);
      }
    });
    starter.start();
    starter.join();
    if (failed.get() != null) {
      throw failed.get();
    }
    try (ChildProcess p = started.get()) {
      WaitStatus st = p.waitFor(Duration.ofSeconds(10));
      assertTrue(st.killed() && st.termSignal() == 9, st.toString());
    }
    // Without it, a child outlives the thread that started it.
    Thread plain = new Thread(() -> {
      try {
        started.set(Launcher.command("sleep", "60").start());
      } catch (Exception e) {
        failed.set(e);
      }
    });
    plain.start();
    plain.join();
    try (ChildProcess p = started.get()) {
      // Asleep in sleep(1) after its starting thread ended: nothing killed it.
      TestTarget.awaitInSyscall(p.pid(), CLOCK_NANOSLEEP, 10_000);
      assertTrue(p.poll().isEmpty(), "a plain child ended with the thread that started it");
    }
  }
}
