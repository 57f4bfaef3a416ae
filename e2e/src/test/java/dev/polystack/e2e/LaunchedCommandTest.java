package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What a command polystack launches ({@code record -- CMD}, {@code vdso -- CMD}) gets when
 * polystack runs as root: the ids of the user who ran sudo (SUDO_UID, SUDO_GID) unless
 * {@code --user}/{@code --group} say otherwise, root only when asked; none of polystack's own
 * variables or OTLP credentials; and death with polystack, even by SIGKILL. The command is a
 * shell from /bin that prints what it is and what it sees (the tests' workloads sit in private
 * directories another user cannot read). Run as root (CI).
 */
class LaunchedCommandTest {
  /** Prints its ids, HOME and USER, how many withheld variables it sees, and one kept one. */
  private static final String PROBE = "echo ids uid=$(id -u) gid=$(id -g) groups=$(id -G);"
      + " echo home=$HOME user=$USER;"
      + " echo leaked=$(env | grep -c -E '^(POLYSTACK_|OTEL_EXPORTER_OTLP_[A-Z_]*HEADERS)');"
      + " echo kept=$OTEL_SERVICE_NAME";

  /** A sudo run by nobody, with OTLP credentials and a polystack setting in the environment. */
  private static final Map<String, String> SUDO_BY_NOBODY = Map.of(
      "SUDO_UID", "65534", "SUDO_GID", "65534", "SUDO_USER", "nobody",
      "OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret-token",
      "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-api-key=s3cret-key",
      "POLYSTACK_TEST_SETTING", "1",
      "OTEL_SERVICE_NAME", "kept-service");

  @TempDir Path dir;
  private int runs;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"record --mode ptrace", "record --mode perf", "vdso --backend ptrace"})
  void underSudoTheCommandRunsAsTheCallerWithoutCredentials(String command) throws Exception {
    var result = Distribution.run(null, SUDO_BY_NOBODY, args(command, List.of()));

    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stdout().contains("ids uid=65534 gid=65534 groups=65534\n"),
        result.stdout());
    assertTrue(result.stdout().contains("home=/nonexistent user=nobody\n"), result.stdout());
    assertTrue(result.stdout().contains("leaked=0\n"), result.stdout());
    assertTrue(result.stdout().contains("kept=kept-service\n"), result.stdout());
    assertTrue(result.stderr().contains("polystack: running the command as nobody (uid 65534),"
        + " gid 65534, the user who ran sudo; --user root runs it as root\n"), result.stderr());
    assertFalse(result.stdout().contains("s3cret") || result.stderr().contains("s3cret"),
        "a credential was printed");
  }

  @Test
  void userAndGroupChooseTheIds() throws Exception {
    var result = Distribution.run(null, Map.of(), args("record --mode perf",
        List.of("--user", "nobody", "--group", "daemon")));

    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stdout().contains("ids uid=65534 gid=1 "), result.stdout());
    assertFalse(result.stderr().contains("running the command as"), result.stderr());
  }

  @Test
  void userRootKeepsRootUnderSudoAndPlainRootStaysRoot() throws Exception {
    var asked = Distribution.run(null, SUDO_BY_NOBODY, args("record --mode perf",
        List.of("--user", "root")));
    assertEquals(0, asked.exitCode(), asked.stderr());
    assertTrue(asked.stdout().contains("ids uid=0 gid=0 "), asked.stdout());
    assertTrue(asked.stdout().contains("leaked=0\n"), "root or not, no credentials: "
        + asked.stdout());

    var plain = Distribution.run(null, Map.of(), args("record --mode perf", List.of()));
    assertEquals(0, plain.exitCode(), plain.stderr());
    assertTrue(plain.stdout().contains("ids uid=0 gid=0 "), plain.stdout());
    assertFalse(plain.stderr().contains("running the command as"), plain.stderr());
  }

  @Test
  void badUsersAreOneLineUsageErrors() throws Exception {
    var unknown = Distribution.run(null, Map.of(), args("record --mode perf",
        List.of("--user", "no-such-user-polystack")));
    assertEquals(2, unknown.exitCode(), unknown.stderr());
    assertEquals(List.of("polystack: --user no-such-user-polystack: no such user"),
        unknown.stderrLines());

    var attach = Distribution.run("record", "--pid", "1", "--user", "nobody");
    assertEquals(2, attach.exitCode(), attach.stderr());
    assertEquals(List.of("polystack: --user applies to a command launched after -- and to"
        + " --comm, --match and --subprocesses, not to --pid alone"), attach.stderrLines());
  }

  /**
   * polystack killed by SIGKILL while it runs a launched command: the command must not outlive
   * it (PR_SET_PDEATHSIG). perf mode matters most: the tracer lets go of the command at its
   * exec, so nothing else ties the two together.
   */
  @ParameterizedTest(name = "--mode {0}")
  @ValueSource(strings = {"ptrace", "perf"})
  void aLaunchedCommandDiesWithPolystack(String mode) throws Exception {
    Path out = dir.resolve("sleep.folded");
    try (Distribution.Running polystack = Distribution.start("record", "--mode", mode,
        "--format", "folded", "-o", out.toString(), "--", "sleep", "600")) {
      int child = awaitChild(polystack, "sleep", 60_000);
      Thread.sleep(500);
      assertTrue(alive(child), "the command ended before polystack did");

      polystack.signal("KILL");
      polystack.await(30);

      long deadline = System.nanoTime() + 10_000_000_000L;
      while (alive(child) && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertFalse(alive(child), "sleep (pid " + child + ") outlived polystack");
    }
  }

  /**
   * At --duration a launched command gets SIGTERM first, as timeout(1) sends it: one that
   * handles it cleans up and exits, and polystack still exits 0 (it ended the command).
   */
  @ParameterizedTest(name = "--mode {0}")
  @ValueSource(strings = {"ptrace", "perf"})
  void atTheDurationALaunchedCommandGetsSigtermFirst(String mode) throws Exception {
    Path out = dir.resolve("term.folded");
    var result = Distribution.run("record", "--mode", mode, "-d", "1s", "--format", "folded",
        "-o", out.toString(), "--", "/bin/sh", "-c",
        "trap 'echo cleaned-up; exit 0' TERM; while :; do :; done");

    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stdout().contains("cleaned-up"), "no SIGTERM reached the command: "
        + result.stdout() + result.stderr());
    assertTrue(result.stderr().contains("polystack: done; the launched target was still running"
        + " and polystack ended it (SIGTERM, then SIGKILL 2 s later if still running)"),
        result.stderr());
  }

  /** A command that ignores SIGTERM gets SIGKILL after the grace period and does not outlive it. */
  @Test
  void aCommandIgnoringSigtermIsKilledAfterTheGracePeriod() throws Exception {
    Path out = dir.resolve("stubborn.folded");
    long start = System.nanoTime();
    var result = Distribution.run("record", "--mode", "perf", "-d", "1s", "--format", "folded",
        "-o", out.toString(), "--", "/bin/sh", "-c", "trap '' TERM; while :; do :; done");
    double seconds = (System.nanoTime() - start) / 1e9;

    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stderr().contains("polystack ended it (SIGTERM, then SIGKILL"),
        result.stderr());
    // A lower bound only: 1 s of recording, then the 2 s the command had to exit.
    assertTrue(seconds >= 3, "the command had no grace period: the run took " + seconds + " s");
  }

  /**
   * A launched command's failure is polystack's exit code, as with time(1) and perf: its exit
   * code, or 128 + the signal that killed it; the profile is written either way.
   */
  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource(delimiter = '|', value = {
    "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3|3",
    "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; kill -SEGV $$|139",
    "exit 0|0",
  })
  void theCommandsExitCodeIsPassedOn(String script, int expected) throws Exception {
    Path out = dir.resolve("exit.folded");
    var result = Distribution.run("record", "--mode", "perf", "--format", "folded", "-o",
        out.toString(), "--", "/bin/sh", "-c", script);

    assertEquals(expected, result.exitCode(), result.stderr());
    assertTrue(result.stderr().contains("polystack: wrote " + out), result.stderr());
    assertTrue(Files.isRegularFile(out), result.stderr());
  }

  private String[] args(String command, List<String> extra) {
    List<String> a = new ArrayList<>(List.of(command.split(" ")));
    Path out = dir.resolve("run-" + (++runs) + ".out");
    if (a.get(0).equals("record")) {
      a.addAll(List.of("--format", "folded", "-o", out.toString()));
    } else {
      a.addAll(List.of("--summary-only", "-o", out.toString()));
    }
    a.addAll(extra);
    a.addAll(List.of("--", "/bin/sh", "-c", PROBE));
    return a.toArray(String[]::new);
  }

  /** The child of the polystack JVM whose command name is {@code comm}, once it has exec'd. */
  private static int awaitChild(Distribution.Running polystack, String comm, long millis)
      throws Exception {
    long deadline = System.nanoTime() + millis * 1_000_000L;
    while (System.nanoTime() < deadline) {
      for (int pid : children(polystack.pid())) {
        try {
          if (Files.readString(Path.of("/proc/" + pid + "/comm")).strip().equals(comm)) {
            return pid;
          }
        } catch (NoSuchFileException e) {
          // gone in between
        }
      }
      Thread.sleep(20);
    }
    throw new AssertionError("polystack started no " + comm + " within " + millis + " ms: "
        + polystack.stderrSoFar());
  }

  private static List<Integer> children(long pid) throws IOException {
    List<Integer> out = new ArrayList<>();
    try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
      for (Path task : tasks.toList()) {
        try {
          String text = Files.readString(task.resolve("children"), StandardCharsets.UTF_8);
          for (String c : text.trim().split("\\s+")) {
            if (!c.isEmpty()) {
              out.add(Integer.parseInt(c));
            }
          }
        } catch (NoSuchFileException e) {
          // thread gone
        }
      }
    }
    return out;
  }

  /** Running or stopped, not gone and not a zombie. */
  private static boolean alive(int pid) throws IOException {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      return stat.charAt(stat.lastIndexOf(')') + 2) != 'Z';
    } catch (NoSuchFileException e) {
      return false;
    }
  }
}
