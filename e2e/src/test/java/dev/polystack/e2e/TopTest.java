package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code polystack top} piped, as a script runs it: plain tables, one per interval and the whole
 * run's at the end, no terminal control sequence, the hot function first by own time, and an
 * attached target left running; and on a terminal, the screen given back at the end.
 *
 * <p>Both workloads split their time about 9 to 1 between {@code hot} and {@code cold} (equal
 * loop bodies, 9 times the iterations). The tests claim only a share of 0.75 for hot: the rest
 * allows for the loops' bookkeeping, start-up and clock reads. Margin: hot's samples k of n are
 * Binomial(n, p) with p >= 0.75 when ticks fall independently of the loops; the class makes
 * {@value #ASSERTIONS} such assertions and each fails by chance below {@link
 * SamplingNoise#binomialLower} at alpha = {@link SamplingNoise#alpha}({@value #ASSERTIONS}), so
 * chance fails the class less than once in {@link SamplingNoise#RUNS} runs. Sample counts come from the target's CPU time, never from
 * a wall-clock duration, so a loaded machine gets as many.
 */
class TopTest {
  static final int ASSERTIONS = 2;
  static final double HOT_SHARE = 0.75;
  /** Fewer samples than this and a share says little: the run is a failure, not a pass. */
  static final long MIN_SAMPLES = 100;

  /** One row of a table: %Own, %Total, OwnTime, TotalTime, Function. */
  record Row(double own, double total, double ownSeconds, double totalSeconds, String function) {}

  /** A table: the samples its header counts and its rows, in order. */
  record Table(String header, long samples, List<Row> rows) {}

  private static final Pattern ROW = Pattern.compile(
      "^\\s*([\\d.]+)%\\s+([\\d.]+)%\\s+([\\d.]+)s\\s+([\\d.]+)s\\s+(.+)$");
  private static final Pattern SAMPLES = Pattern.compile("; (\\d+) samples?,");

  @TempDir Path dir;

  /**
   * On a terminal, q ends top as Ctrl-C does: the whole run's table, exit 0, the target runs
   * on. The terminal is script(1)'s pseudo-terminal; the key goes through it as typed.
   */
  @Test
  void qQuitsOnATerminal() throws Exception {
    try (Target target = Target.start(Workloads.binary("hot_cold"))) {
      String command = Distribution.command("top", "--pid", Integer.toString(target.pid()),
          "--interval", "500ms").stream().map(a -> "'" + a.replace("'", "'\\''") + "'")
          .collect(java.util.stream.Collectors.joining(" "));
      Path out = dir.resolve("terminal.txt");
      Process script = new ProcessBuilder("script", "-qfec", command, "/dev/null")
          .redirectOutput(out.toFile()).redirectErrorStream(true).start();
      try {
        Awaits.until("a table on the terminal", 120_000,
            () -> Files.readString(out).contains("percentages: the last 500 ms"));
        script.getOutputStream().write('q');
        script.getOutputStream().flush();
        assertTrue(script.waitFor(30, java.util.concurrent.TimeUnit.SECONDS),
            "q did not end top: " + Files.readString(out));
        assertEquals(0, script.exitValue(), Files.readString(out));
        assertTrue(Files.readString(out).contains("whole run"), Files.readString(out));
      } finally {
        script.destroyForcibly();
      }
      RecordAttachTest.assertReleasedAndRunning(target);
    }
  }

  @Test
  void attachedToANativeProgramHotLeadsByOwnTimeAndTheTargetRunsOn() throws Exception {
    try (Target target = Target.start(Workloads.binary("hot_cold"));
        Distribution.Running top = Distribution.start("top", "--pid",
            Integer.toString(target.pid()), "--interval", "500ms")) {
      RecordAttachTest.awaitSampling("bpf", target, top); // bpf: the default mode
      // ~2 s of the target's CPU: ~200 samples at 99 Hz, however loaded the machine.
      Awaits.cpuTicks(target.pid(), 200, 120_000);
      Awaits.until("an interval's table on stdout", 60_000,
          () -> top.stdoutSoFar().contains("percentages: the last 500 ms"));
      top.signal("INT");
      var result = top.await(30);

      assertEquals(0, result.exitCode(), result.stderr());
      assertPlain(result.stdout());
      List<Table> tables = tables(result.stdout());
      assertTrue(tables.size() >= 2, "an interval's table and the final one:\n"
          + result.stdout());
      assertTrue(tables.get(tables.size() - 1).header().contains("whole run"), result.stdout());
      assertHotLeads(tables.get(tables.size() - 1), "hot (hot_cold)", "cold (hot_cold)",
          result);
      // The usual summary, on stderr.
      assertTrue(result.stderr().contains("polystack: stopped; target still running"),
          result.stderr());

      RecordAttachTest.assertReleasedAndRunning(target);
      RecordAttachTest.assertStillComputing(target);
      target.stdin().close();
      assertEquals(0, target.awaitExit(30), target.output());
      assertTrue(target.output().contains("done"), target.output());
    }
  }

  /**
   * On a terminal (a pty from script(1)), the live tables are drawn on the alternate screen,
   * which is left once, cursor shown again, before the whole run's table goes on the user's
   * screen; the attached target runs on.
   */
  @Test
  void onATerminalTheScreenIsGivenBackBeforeTheFinalTable() throws Exception {
    try (Target target = Target.start(Workloads.binary("hot_cold"))) {
      List<String> top = Distribution.command("top", "--pid", Integer.toString(target.pid()),
          "-d", "3s", "--interval", "200ms");
      StringBuilder shell = new StringBuilder("stty cols 100 rows 30;");
      for (String word : top) {
        shell.append(" '").append(word).append('\'');
      }
      var result = Tools.run(120, null, List.of("script", "-qec", shell.toString(),
          "/dev/null"));
      String screen = result.stdout();

      assertEquals(0, result.exitCode(), screen + result.stderr());
      String enter = "\033[?1049h";
      String leave = "\033[?25h\033[?1049l";
      assertEquals(1, count(screen, enter), screen);
      assertEquals(1, count(screen, leave), screen);
      int left = screen.indexOf(leave);
      assertTrue(screen.indexOf(enter) < left, screen);
      assertTrue(screen.lastIndexOf("\033[H\033[2J") < left, "no redraw after leaving: " + screen);
      String after = screen.substring(left + leave.length());
      assertTrue(after.contains("whole run: percentages and times since the start"), after);
      assertFalse(after.contains("\033"), "plain text after the screen is given back: " + after);
      assertTrue(after.contains("polystack: done; target still running"), after);

      RecordAttachTest.assertReleasedAndRunning(target);
      target.stdin().close();
      assertEquals(0, target.awaitExit(30), target.output());
    }
  }

  private static int count(String text, String part) {
    int n = 0;
    for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
      n++;
    }
    return n;
  }

  /**
   * A Lua program launched after --, until it exits: its functions are named by the LuaJIT
   * plug-in (name, chunk and first line). The interpreter (-joff) keeps each function in a frame
   * of its own; how JIT traces are named is LuaJitTraceFramesTest's subject.
   */
  @Test
  void launchedLuaProgramHotLeadsByOwnTimeNamedByThePlugin() throws Exception {
    Path script = dir.resolve("hot_cold.lua");
    try (InputStream in = getClass().getResourceAsStream("/lua/hot_cold.lua")) {
      Files.copy(in, script);
    }
    // 2 s of the program's CPU time: ~200 samples at 99 Hz.
    var result = Distribution.run("top", "--once", "--", "luajit", "-joff", script.toString(),
        "2");

    assertEquals(0, result.exitCode(), result.stderr());
    assertPlain(result.stdout());
    List<Table> tables = tables(result.stdout());
    assertEquals(1, tables.size(), "--once prints the final table only:\n" + result.stdout());
    assertHotLeads(tables.get(0), "hot (" + script + ":1)", "cold (" + script + ":7)", result);
    assertTrue(tables.get(0).rows().stream().anyMatch(r -> r.function().startsWith("main chunk")
        && r.total() > 90), result.stdout());
    assertTrue(result.stderr().contains("polystack: target exited with code 0"),
        result.stderr());
  }

  /**
   * {@code hot} is the first row by own time, with a share no smaller than chance allows for
   * {@link #HOT_SHARE}; {@code cold} comes later with time of its own.
   */
  static void assertHotLeads(Table table, String hot, String cold, Distribution.Result result) {
    String context = table + "\nstderr:\n" + result.stderr();
    long n = table.samples();
    assertTrue(n >= MIN_SAMPLES, "too few samples to judge: " + context);
    Row first = table.rows().get(0);
    assertEquals(hot, first.function(), context);
    double lower = (double) SamplingNoise.binomialLower(n, HOT_SHARE,
        SamplingNoise.alpha(ASSERTIONS)) / n;
    assertTrue(first.own() / 100 >= lower, "hot's own share " + first.own() + "% is below "
        + 100 * lower + "% for " + n + " samples: " + context);
    assertTrue(first.ownSeconds() > 0 && first.totalSeconds() >= first.ownSeconds(), context);
    Row coldRow = table.rows().stream().filter(r -> r.function().equals(cold)).findFirst()
        .orElseThrow(() -> new AssertionError("no row for " + cold + ": " + context));
    assertTrue(coldRow.own() > 0 && coldRow.own() < first.own(), context);
  }

  /** Piped output holds no control character but newlines: nothing drives a terminal. */
  static void assertPlain(String stdout) {
    for (int i = 0; i < stdout.length(); i++) {
      char c = stdout.charAt(i);
      assertFalse(c != '\n' && (c < 0x20 || c == 0x7f), "control character 0x"
          + Integer.toHexString(c) + " at " + i + " in:\n" + stdout);
    }
  }

  /** The tables of top's plain output, each from its "polystack top:" header line on. */
  static List<Table> tables(String stdout) {
    List<Table> tables = new ArrayList<>();
    StringBuilder header = null;
    long samples = -1;
    List<Row> rows = null;
    for (String line : stdout.split("\n", -1)) {
      if (line.startsWith("polystack top: ")) {
        if (header != null) {
          tables.add(new Table(header.toString(), samples, rows));
        }
        header = new StringBuilder(line);
        Matcher m = SAMPLES.matcher(line);
        samples = m.find() ? Long.parseLong(m.group(1)) : -1;
        rows = new ArrayList<>();
        continue;
      }
      if (header == null) {
        continue; // anything the target printed before
      }
      Matcher m = ROW.matcher(line);
      if (m.matches()) {
        rows.add(new Row(Double.parseDouble(m.group(1)), Double.parseDouble(m.group(2)),
            Double.parseDouble(m.group(3)), Double.parseDouble(m.group(4)), m.group(5)));
      } else if (rows.isEmpty()) {
        header.append('\n').append(line);
      }
    }
    if (header != null) {
      tables.add(new Table(header.toString(), samples, rows));
    }
    return tables;
  }
}
