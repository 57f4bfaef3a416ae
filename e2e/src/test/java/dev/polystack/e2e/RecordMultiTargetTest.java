package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code polystack record} of several processes: several --pid, selection by --comm and
 * --match, and --subprocesses following a child forked (or exec'd) after polystack started.
 * Every process attached is left running, untraced and unstopped.
 */
class RecordMultiTargetTest {

  @TempDir Path dir;

  @ParameterizedTest(name = "--mode {0}")
  @ValueSource(strings = {"bpf", "perf", "ptrace"})
  void twoProcessesInOneRecordEachUnderItsOwnRoot(String mode) throws Exception {
    Path out = dir.resolve("two.folded");
    try (Target a = Target.start(Workloads.binary("two_threads"), "stdin");
        Target b = Target.start(Workloads.binary("two_threads"), "stdin")) {
      var result = Distribution.run("record", "--mode", mode, "-p", a.pid() + "," + b.pid(),
          "-d", "2s", "-o", out.toString());

      RecordLaunchTest.assertSucceeded(result, out);
      Map<String, Long> stacks = Tools.folded(out);
      for (Target t : new Target[] {a, b}) {
        String root = "process " + t.pid() + " (two_threads);";
        assertTrue(stacks.keySet().stream().anyMatch(
            s -> s.startsWith(root) && s.endsWith(";main;top_a;mid_a;leaf_a")),
            root + " missing in " + stacks.keySet() + "\n" + result.stderr());
        assertTrue(result.stderr().contains("polystack: process " + t.pid() + " (two_threads): "),
            result.stderr());
      }
      assertTrue(stacks.keySet().stream().allMatch(s -> s.startsWith("process ")),
          "every stack starts with its process: " + stacks.keySet());
      for (Target t : new Target[] {a, b}) {
        RecordAttachTest.assertReleasedAndRunning(t);
        t.stdin().close();
        assertEquals(0, t.awaitExit(30), t.output());
      }
    }
  }

  /** Ctrl-C ends a record of several processes: every one is detached and runs on. */
  @ParameterizedTest(name = "--mode {0}")
  @ValueSource(strings = {"ptrace", "bpf"})
  void aStopSignalReleasesEveryProcess(String mode) throws Exception {
    Path out = dir.resolve("signal.folded");
    try (Target a = Target.start(Workloads.binary("two_threads"), "stdin");
        Target b = Target.start(Workloads.binary("two_threads"), "stdin");
        Distribution.Running polystack = Distribution.start("record", "--mode", mode, "-p",
            Integer.toString(a.pid()), "-p", Integer.toString(b.pid()), "-o", out.toString())) {
      RecordAttachTest.awaitSampling(mode, a, polystack);
      RecordAttachTest.awaitSampling(mode, b, polystack);
      Awaits.cpuTicks(b.pid(), 40, 60_000);
      polystack.signal("INT");
      var result = polystack.await(30);

      RecordLaunchTest.assertSucceeded(result, out);
      assertTrue(Tools.total(Tools.folded(out)) > 0, "no samples in " + out);
      for (Target t : new Target[] {a, b}) {
        RecordAttachTest.assertReleasedAndRunning(t);
        RecordAttachTest.assertStillComputing(t);
        t.stdin().close();
        assertEquals(0, t.awaitExit(30), t.output());
      }
    }
  }

  /** A launched command's children, started by its shell, are recorded under their own roots. */
  @Test
  void subprocessesOfALaunchedCommand() throws Exception {
    Path out = dir.resolve("launched.folded");
    String two = Workloads.binary("two_threads").toString();
    var result = Distribution.run("record", "--subprocesses", "-o", out.toString(), "--", "sh",
        "-c", two + " 2 & " + two + " 2; wait");

    RecordLaunchTest.assertSucceeded(result, out);
    assertTrue(result.stderr().contains("polystack: target exited with code 0"), result.stderr());
    long children = Tools.folded(out).keySet().stream()
        .filter(s -> s.endsWith(";main;top_a;mid_a;leaf_a"))
        .map(s -> s.substring(0, s.indexOf(';')))
        .distinct().count();
    assertEquals(2, children, Tools.folded(out).keySet() + "\n" + result.stderr());
  }

  /** --comm is exact (/proc/PID/comm), --match searches the command line; others stay out. */
  @Test
  void commAndMatchSelectOnlyTheProcessesTheyName() throws Exception {
    String name = "pscomm" + ProcessHandle.current().pid() % 100000;
    Path renamed = dir.resolve(name);
    Files.copy(Workloads.binary("two_threads"), renamed);
    renamed.toFile().setExecutable(true);
    try (Target a = Target.start(renamed, "stdin");
        Target b = Target.start(renamed, "stdin");
        Target other = Target.start(Workloads.binary("two_threads"), "stdin")) {
      Path byComm = dir.resolve("comm.folded");
      var comm = Distribution.run("record", "--comm", name, "-d", "1s", "-o", byComm.toString());
      RecordLaunchTest.assertSucceeded(comm, byComm);
      assertTrue(comm.stderr().contains("polystack: selected 2 processes: " + a.pid() + " ("
          + name + "), " + b.pid() + " (" + name + ")"), comm.stderr());
      assertFalse(Tools.folded(byComm).keySet().stream()
          .anyMatch(s -> s.startsWith("process " + other.pid() + " ")), "not selected");

      Path byMatch = dir.resolve("match.folded");
      // The directory is the test's own: only a and b run from it.
      var match = Distribution.run("record", "--match", Pattern.quote(renamed.toString())
          + " stdin$", "-d", "1s", "-o", byMatch.toString());
      RecordLaunchTest.assertSucceeded(match, byMatch);
      assertTrue(match.stderr().contains("polystack: selected 2 processes: " + a.pid()),
          match.stderr());
      for (Target t : new Target[] {a, b, other}) {
        RecordAttachTest.assertReleasedAndRunning(t);
        t.stdin().close();
        assertEquals(0, t.awaitExit(30), t.output());
      }
    }
  }

  /** dump stops one process: a name must select exactly one. */
  @Test
  void dumpTakesOneProcessByName() throws Exception {
    String name = "psdump" + ProcessHandle.current().pid() % 100000;
    Path renamed = dir.resolve(name);
    Files.copy(Workloads.binary("two_threads"), renamed);
    renamed.toFile().setExecutable(true);
    try (Target a = Target.start(renamed, "stdin")) {
      Awaits.cpuTicks(a.pid(), 2, 30_000);
      var one = Distribution.run("dump", "--comm", name);
      assertEquals(0, one.exitCode(), one.stderr());
      assertEquals("polystack: selected process " + a.pid() + " (" + name + ")\n", one.stderr());
      assertTrue(one.stdout().startsWith("Process " + a.pid() + "\n"), one.stdout());
      try (Target b = Target.start(renamed, "stdin")) {
        Awaits.cpuTicks(b.pid(), 2, 30_000);
        var two = Distribution.run("dump", "--match", Pattern.quote(renamed.toString()));
        assertEquals(2, two.exitCode(), two.stderr());
        assertTrue(two.stderr().startsWith("polystack: --match " + Pattern.quote(
            renamed.toString()) + " selects 2 processes (" + a.pid() + " (" + name + "), "
            + b.pid() + " (" + name + ")); this command takes one: give --pid"), two.stderr());
        b.stdin().close();
        assertEquals(0, b.awaitExit(30), b.output());
      }
      RecordAttachTest.assertReleasedAndRunning(a);
      a.stdin().close();
      assertEquals(0, a.awaitExit(30), a.output());
    }
  }

  @Test
  void aNameThatSelectsNothingFailsInOneLine() throws Exception {
    var result = Distribution.run("record", "--comm", "no-such-proc-x", "-d", "1s", "-o",
        dir.resolve("none.folded").toString());
    assertEquals(1, result.exitCode(), result.stderr());
    assertEquals("polystack: no process matches --comm no-such-proc-x (polystack itself"
        + " excluded); list candidates with: ps -eo pid,user,comm,args\n", result.stderr());

    // polystack's own command line contains the pattern: it must not select itself.
    var self = Distribution.run("record", "--match", "no-such-pattern-[x]yz", "-d", "1s", "-o",
        dir.resolve("self.folded").toString());
    assertEquals(1, self.exitCode(), self.stderr());
    assertTrue(self.stderr().startsWith("polystack: no process matches --match"), self.stderr());
  }

  @Test
  void subprocessesIsRefusedInPtraceModeWithTheModesThatCan() throws Exception {
    var result = Distribution.run("record", "--mode", "ptrace", "--subprocesses", "-p", "1",
        "-d", "1s", "-o", dir.resolve("x.folded").toString());
    assertEquals(2, result.exitCode(), result.stderr());
    assertTrue(result.stderr().startsWith("polystack: --subprocesses cannot be used with --mode"
        + " ptrace: use --mode bpf or --mode perf"), result.stderr());
  }

  /**
   * The parent forks only once polystack samples it; the child (spinning, or exec'ing
   * two_threads) is found in /proc and its frames are in the profile under its own process.
   */
  @ParameterizedTest(name = "--mode {0}, {1}")
  @CsvSource({"bpf, fork", "bpf, exec", "perf, fork", "perf, exec"})
  void aChildStartedAfterTheRecordIsSampled(String mode, String how) throws Exception {
    Path out = dir.resolve("children.folded");
    String[] args = how.equals("fork") ? new String[] {"4"}
        : new String[] {"4", Workloads.binary("two_threads").toString(), "4"};
    try (Target parent = Target.start(Workloads.binary("spawner"), args);
        Distribution.Running polystack = Distribution.start("record", "--mode", mode, "--pid",
            Integer.toString(parent.pid()), "--subprocesses", "-o", out.toString())) {
      RecordAttachTest.awaitSampling("bpf", parent, polystack);
      parent.stdin().write("go\n".getBytes(StandardCharsets.US_ASCII));
      parent.stdin().flush();
      parent.awaitOutput("child ", 30_000);
      Matcher m = Pattern.compile("child (\\d+)").matcher(parent.output());
      assertTrue(m.find(), parent.output());
      int child = Integer.parseInt(m.group(1));
      // The record ends by itself once the parent and its child have exited.
      assertEquals(0, parent.awaitExit(60), parent.output());
      var result = polystack.await(60);

      RecordLaunchTest.assertSucceeded(result, out);
      Map<String, Long> stacks = Tools.folded(out);
      String leaf = how.equals("fork") ? ";main;spawn;child_top;child_leaf"
          : ";main;top_a;mid_a;leaf_a";
      assertTrue(stacks.keySet().stream().anyMatch(
          s -> s.startsWith("process " + child + " (") && s.endsWith(leaf)),
          "child " + child + " missing in " + stacks.keySet() + "\n" + result.stderr());
      assertTrue(result.stderr().contains("polystack: process " + child + " ("),
          result.stderr());
    }
  }
}
