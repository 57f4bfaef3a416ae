package dev.polystack.host.probes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.Syscalls;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * polystack vdso as its own JVM, attached to a workload that keeps calling clock_gettime, then
 * killed or told to stop: the workload must run on and exit normally.
 */
class VdsoSignalsTest {

  private static void survives(String backend, int signal, boolean cleanExit) throws Exception {
    Path out = Files.createTempFile("vdso-wl", ".out");
    Path log = Files.createTempFile("vdso-cli", ".out");
    Path stop = Files.createTempDirectory("vdso-wl").resolve("stop");
    // It calls until the test is done with it (stop file), however long polystack takes.
    ChildProcess target = Launcher.command(VdsoWorkload.binary().toString(), "0",
        VdsoWorkload.UNTIL_STOPPED_MS, "0", stop.toString()).stdout(out).start();
    try (target) {
      Path java = Path.of(System.getProperty("java.home"), "bin", "java");
      ChildProcess cli = Launcher.command(List.of(java.toString(), "-cp",
          System.getProperty("java.class.path"), "dev.polystack.host.cli.Main", "vdso",
          "--backend", backend, "--functions", "clock_gettime", "--json", "--calls",
          "--pid", Integer.toString(target.pid()))).stdout(log).start();
      try (cli) {
        long until = System.nanoTime() + 20_000_000_000L;
        // Wait for the first call record: the breakpoints are armed and firing.
        while (System.nanoTime() < until
            && !Files.readString(log).contains("\"type\":\"call\"")) {
          Thread.sleep(20);
        }
        assertTrue(Files.readString(log).contains("\"type\":\"call\""), "no call traced");
        cli.kill(signal);
        WaitStatus cs = cli.waitFor(Duration.ofSeconds(20));
        if (cleanExit) {
          assertTrue(cs.exited() && cs.exitCode() == 0, "polystack " + cs);
          assertTrue(Files.readString(log).contains("session_summary"));
        }
      }
      // Calling on after polystack is gone: an armed breakpoint or a pending SIGTRAP would
      // kill it now. Then it ends by itself, as it would have.
      boolean calledOn = VdsoWorkload.awaitRounds(target.pid(), 200, 20_000);
      Files.createFile(stop);
      WaitStatus st = target.waitFor(Duration.ofSeconds(20));
      assertTrue(st.exited() && st.exitCode() == 0, "target " + st);
      assertTrue(calledOn, "the target did not call on after polystack ended");
      assertTrue(VdsoWorkload.done(out));
      assertEquals(20, VdsoWorkload.usr1(out));
    }
  }

  @Test
  void perfTargetSurvivesSigkillOfPolystack() throws Exception {
    survives("perf", Syscalls.SIGKILL, false);
  }

  @Test
  void ptraceDetachesCleanlyOnSigterm() throws Exception {
    survives("ptrace", Syscalls.SIGTERM, true);
  }

  @Test
  void perfEndsCleanlyOnSigint() throws Exception {
    survives("perf", Syscalls.SIGINT, true);
  }
}
