package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Selection by name (--comm, --match) with another user's processes built to stall, starve or
 * fool a root polystack, and to write on its terminal (docs/reliability.md, "Root safety: other
 * users' processes"). Each attack runs real processes of user nobody; run as root.
 */
class HostileSelectionTest {
  @TempDir Path dir;
  /** Where nobody may read and run what it is given (the @TempDir is root's 0700). */
  private Path shared;
  private final List<Process> started = new ArrayList<>();

  @BeforeEach
  void sharedDirectory() throws Exception {
    shared = Files.createTempDirectory("polystack-hostile");
    Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  @AfterEach
  void endProcesses() throws Exception {
    for (Process p : started) {
      p.destroyForcibly(); // the test's own processes
      p.waitFor(30, TimeUnit.SECONDS);
    }
    try (var files = Files.list(shared)) {
      for (Path f : files.toList()) {
        Files.delete(f);
      }
    }
    Files.delete(shared);
  }

  record Run(int exit, String out, String err) {}

  private static Run polystack(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = Main.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Run(exit, out.toString(), err.toString());
  }

  /** {@code argv} as user nobody (or root with {@code asRoot}), started by the test. */
  private Process start(boolean asRoot, List<String> argv) throws Exception {
    List<String> command = new ArrayList<>();
    if (!asRoot) {
      command.addAll(List.of("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"));
    }
    command.addAll(argv);
    Process p = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    started.add(p);
    return p;
  }

  /** A copy of sleep under {@code name}: its comm is that name. */
  private Path sleepNamed(String name) throws Exception {
    Path copy = shared.resolve(name);
    Files.copy(Path.of("/bin/sleep"), copy, StandardCopyOption.REPLACE_EXISTING);
    Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rwxr-xr-x"));
    return copy;
  }

  /** A shell of nobody whose command line is {@code words} copies of {@code word}. */
  private Process longCommandLine(String word, int words) throws Exception {
    List<String> argv = new ArrayList<>(List.of("sh", "-c", "sleep 600; :", "x"));
    for (int i = 0; i < words; i++) {
      argv.add(word);
    }
    Process p = start(false, argv);
    int pid = (int) p.pid();
    await(() -> commandLineLength(pid) > words, "the long command line in place");
    return p;
  }

  private static long commandLineLength(int pid) {
    try {
      return ProcFs.system().forPid(pid).cmdline().arguments().size();
    } catch (ProcReadException e) {
      return 0;
    }
  }

  /** #7: a name with a right-to-left override is printed as an escape, never raw. */
  @Test
  void aBidiOverrideInANameIsEscapedInTheSelectionLine() throws Exception {
    String name = "evil\u202eexe";
    Process p = start(false, List.of(sleepNamed(name).toString(), "600"));
    await(() -> comm((int) p.pid()).equals(name), "the process named");

    Run run = polystack("record", "--comm", name, "--mode", "perf", "-d", "200ms", "-o",
        dir.resolve("bidi.folded").toString());

    assertEquals(0, run.exit(), run.err());
    assertTrue(run.err().contains("selected process " + p.pid() + " (evil\\u202eexe)"),
        run.err());
    assertFalse((run.out() + run.err()).contains("\u202e"), "no raw override: " + run.err());
  }

  /**
   * #6: 65 processes of nobody with the name of root's own make a selection of all owners too
   * large for ptrace mode; --user root picks root's alone. (bpf and perf modes record them all
   * on one pipeline.)
   */
  @Test
  void lookAlikesOfAnotherUserAreLeftOutWithUser() throws Exception {
    Path binary = sleepNamed("lookalike");
    Process mine = start(true, List.of(binary.toString(), "600"));
    List<Process> others = new ArrayList<>();
    for (int i = 0; i < 65; i++) {
      others.add(start(false, List.of(binary.toString(), "600")));
    }
    for (Process o : others) {
      await(() -> comm((int) o.pid()).equals("lookalike"), "nobody's look-alike running");
    }
    await(() -> comm((int) mine.pid()).equals("lookalike"), "root's process running");

    Run root = polystack("record", "--comm", "lookalike", "--user", "root", "--mode", "perf",
        "-d", "200ms", "-o", dir.resolve("root.folded").toString());
    assertEquals(0, root.exit(), root.err());
    assertTrue(root.err().contains("selected process " + mine.pid() + " (lookalike)"),
        root.err());

    Run all = polystack("record", "--comm", "lookalike", "--mode", "ptrace", "-d", "200ms", "-o",
        dir.resolve("all.folded").toString());
    assertEquals(1, all.exit(), all.err());
    assertEquals("polystack: 66 processes match --comm lookalike, more than the 64 one"
        + " ptrace-mode record takes; use --mode bpf or perf, or narrow the selection"
        + " (--user NAME, a longer --match)\n", all.err());
  }

  /**
   * #4: {@code --match 'java.*MyApp'} over a 128 KiB command line of nobody's took 22 s with a
   * backtracking engine (quadratic); RE2 takes time linear in the line. Compared as a ratio in
   * one run: the whole command against a 128 KiB line and against an 8 KiB one, which a
   * quadratic engine sets about 256 apart and a linear one no further than 16.
   */
  @Test
  void aLongCommandLineCannotMakeMatchQuadratic() throws Exception {
    long small = matchTime(1_600); // "java " x 1,600: 8 KiB
    long large = matchTime(25_600); // 128 KiB
    assertTrue(large < 8 * small, "128 KiB took " + large / 1_000_000 + " ms, 8 KiB "
        + small / 1_000_000 + " ms: not linear");
  }

  private long matchTime(int words) throws Exception {
    Process p = longCommandLine("java", words);
    try {
      long best = Long.MAX_VALUE;
      for (int i = 0; i < 2; i++) {
        long t0 = System.nanoTime();
        Run run = polystack("record", "--match", "java.*MyApp", "--mode", "perf", "-d", "200ms",
            "-o", dir.resolve("match.folded").toString());
        best = Math.min(best, System.nanoTime() - t0);
        assertEquals(1, run.exit(), run.err());
        assertTrue(run.err().startsWith("polystack: no process matches --match java.*MyApp"),
            run.err());
      }
      return best;
    } finally {
      p.destroyForcibly();
      p.waitFor(30, TimeUnit.SECONDS);
    }
  }

  /**
   * #5: 100 processes of nobody with 1 MiB command lines each exhausted a 64 MiB heap even for
   * --comm, which never needs them; now --comm reads none, and --match reads at most 128 KiB of
   * each, 32 MiB in all, and says so in one line beyond that. Run in a JVM of its own with the
   * small heap.
   */
  @Test
  void longCommandLinesOfManyProcessesCannotExhaustTheHeap() throws Exception {
    String arg = "y".repeat(127 * 1024);
    for (int i = 0; i < 100; i++) {
      List<String> argv = new ArrayList<>(List.of("sh", "-c", "sleep 600; :", "x"));
      for (int j = 0; j < 8; j++) {
        argv.add(arg);
      }
      start(false, argv);
    }
    for (Process p : started) {
      await(() -> commandLineLength((int) p.pid()) >= 12, "the long command lines in place");
    }

    Run comm = polystackJvm("-Xmx64m", "record", "--comm", "no-such-name", "-o",
        dir.resolve("comm.folded").toString());
    assertEquals(1, comm.exit(), comm.err());
    assertEquals("polystack: no process matches --comm no-such-name (polystack itself"
        + " excluded); list candidates with: ps -eo pid,user,comm,args\n", comm.err());

    for (int i = 0; i < 200; i++) { // 300 in all, 128 KiB read of each: past 32 MiB
      List<String> argv = new ArrayList<>(List.of("sh", "-c", "sleep 600; :", "x"));
      argv.add(arg);
      argv.add(arg);
      start(false, argv);
    }
    for (Process p : started) {
      await(() -> commandLineLength((int) p.pid()) >= 6, "the long command lines in place");
    }
    Run match = polystackJvm("-Xmx64m", "record", "--match", "MyApp", "-o",
        dir.resolve("match.folded").toString());
    assertEquals(1, match.exit(), match.err());
    assertEquals("polystack: cannot select --match MyApp: the command lines to match exceed 32"
        + " MiB in all (the limit of one --match, at most 128 KiB of each process); narrow the"
        + " processes read with --user NAME, or select with --comm or --pid\n", match.err());

    Run narrowed = polystackJvm("-Xmx64m", "record", "--match", "MyApp", "--user", "root", "-o",
        dir.resolve("match.folded").toString());
    assertEquals(1, narrowed.exit(), narrowed.err());
    assertTrue(narrowed.err().startsWith("polystack: no process matches --match MyApp of user"
        + " id 0"), narrowed.err());
  }

  private static Run polystackJvm(String heap, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), heap, "-cp",
        System.getProperty("java.class.path"), "dev.polystack.host.cli.Main"));
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).start();
    byte[] out = p.getInputStream().readAllBytes();
    byte[] err = p.getErrorStream().readAllBytes();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS));
    return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8),
        new String(err, StandardCharsets.UTF_8));
  }

  private static String comm(int pid) {
    try {
      return ProcFs.system().forPid(pid).status().name();
    } catch (ProcReadException e) {
      return "";
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
