package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Where a JIT-compiled program's time goes, against the program's own clock: jit_report.lua
 * formats 200 rows with string.format in a small function (row, which the JIT inlines into the
 * loop's trace), sorts them with a Lua comparator and concatenates them, and times each phase
 * with its thread's CPU clock. polystack's share of each phase (by the line of report's frame)
 * must match the program's, and the samples of the format phase must show row, the frame the
 * trace inlined, as often as the phase spends outside its loop's own bookkeeping (measured by
 * the program too, as its "grow" phase). jit.p is no oracle here: its profiler adds guards to
 * the traces it samples, and charges time in C to the next Lua function the VM reaches.
 *
 * <p>A phase's time runs from one clock read to the next, so the line reading the clock after
 * a phase belongs to it. Sort and concat are compared as one: the trace that runs after
 * table.sort returns reads the clock (now, inlined) and calls table.concat's C code with no
 * snapshot between, so polystack places concat's time at the clock read's line, the last one
 * the trace's snapshots know (docs/luajit.md, "Frames a trace inlined"). The runs use bpf mode,
 * the default: ptrace mode stops a thread at its next entry into the kernel, which for this
 * program is mostly its clock reads (a quarter of the samples land on them, for under 3% of the
 * time).
 *
 * <p>Margins: a phase of true share p gets k of n samples, k binomial(n, p) when samples fall
 * independently of the phases (a 2 ms tick against phases 20-400 us long, with jitter). A test
 * run makes 8 share comparisons (2 builds x 4); each allows 4 standard deviations,
 * sqrt(p(1-p)/n), which chance exceeds with probability 6.3e-5, so all 8 pass but once in
 * 2,000 runs (5.1e-4) when only chance is at work. On top, a fixed {@link #SLACK} for what the
 * two clocks legitimately see differently: work the program's clock charges to the phase in
 * which it happens while polystack shows where its code runs (a GC step at the next trace's
 * check, a trace exit's snapshot restore, the clock reads themselves), 1-2% in measured runs.
 */
class LuaJitSelfTimedTest {
  static final String SCRIPT = "jit_report.lua";
  /**
   * What report's frame is at in each phase of jit_report.lua: the phase's own statement and
   * the clock read that ends it (their lines are looked up in the script).
   */
  static final Map<String, String> PHASE_BY_STATEMENT = Map.of(
      "grown[i] = filler", "grow", "local t1 = now()", "grow",
      "rows[i] = row(n + i)", "format", "local t2 = now()", "format",
      "table.sort(rows, compare_len)", "sort+concat", "local t3 = now()", "sort+concat",
      "table.concat(rows", "sort+concat", "local t4 = now()", "sort+concat");
  static final double Z = 4.0;
  static final double SLACK = 0.02;
  static final long MIN_SAMPLES = 800;

  @TempDir Path dir;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"upstream", "openresty"})
  void phaseSharesMatchTheProgramsClockAndInlinedRowShows(String buildName) throws Exception {
    LuaJitBuild build = buildName.equals("upstream") ? LuaJitBuild.upstream()
        : LuaJitBuild.openResty();
    try (InputStream in = getClass().getResourceAsStream("/lua/" + SCRIPT)) {
      Files.copy(in, dir.resolve(SCRIPT));
    }
    Map<Integer, String> phaseByLine = new TreeMap<>();
    List<String> lines = Files.readAllLines(dir.resolve(SCRIPT));
    PHASE_BY_STATEMENT.forEach((statement, phase) -> {
      for (int i = 0; i < lines.size(); i++) {
        if (lines.get(i).contains(statement)) {
          phaseByLine.put(i + 1, phase);
        }
      }
    });
    assertEquals(PHASE_BY_STATEMENT.size(), phaseByLine.size(), "phase lines: " + phaseByLine);
    // 499 Hz for 4 s of the program's CPU time: ~2,000 samples, however loaded the machine.
    Distribution.Result result = Distribution.run(dir, build.env(), "record", "--rate", "499",
        "--format", "folded", "-o", "out.folded", "--", build.executable().toString(), "-e",
        "SECONDS = 4; OUT = 'shares.txt'", SCRIPT);
    assertEquals(0, result.exitCode(), result.stderr());
    Map<String, Double> truth = new TreeMap<>();
    for (String line : Files.readAllLines(dir.resolve("shares.txt"))) {
      String[] f = line.split(" ");
      truth.put(f[0], Double.parseDouble(f[1]));
    }

    FoldedStacks ours = FoldedStacks.read(dir.resolve("out.folded"));
    Map<String, Long> phases = new TreeMap<>();
    long inProgram = 0;
    long withRow = 0;
    long lineZero = 0;
    List<String> atLineZero = new ArrayList<>();
    for (FoldedStacks.Stack s : ours.stacks()) {
      List<FoldedStacks.LuaFrame> frames = s.luaFrames(SCRIPT);
      if (frames.isEmpty()) {
        continue;
      }
      inProgram += s.count();
      if (frames.stream().anyMatch(f -> f.line() == 0)) {
        lineZero += s.count();
        atLineZero.add(s.toString());
      }
      String phase = "other";
      for (FoldedStacks.LuaFrame f : frames) {
        if (f.name().equals("report")) {
          phase = phaseByLine.getOrDefault(f.line(), "other");
        }
      }
      phases.merge(phase, s.count(), Long::sum);
      if (phase.equals("format") && frames.stream().anyMatch(f -> f.name().equals("row"))) {
        withRow += s.count();
      }
    }
    long n = inProgram;
    String stderr = String.join("; ", result.stderrLines());
    String summary = String.format("%s: program %s; polystack %s and row in %d, of %d samples;"
        + " %s", build, truth, phases, withRow, n, stderr);
    System.out.println(summary);
    assertTrue(n >= MIN_SAMPLES, "too few samples: " + summary + ours.top(8));

    truth.put("sort+concat", truth.get("sort") + truth.get("concat"));
    for (String phase : List.of("grow", "format", "sort+concat")) {
      double p = truth.get(phase);
      double measured = phases.getOrDefault(phase, 0L) / (double) n;
      assertTrue(Math.abs(measured - p) <= margin(p, n), String.format(
          "%s: polystack %.3f, the program %.3f, margin %.3f: %s%s", phase, measured, p,
          margin(p, n), summary, ours.top(8)));
    }
    // row, inlined into the format loop's trace, shows wherever the loop is not in its own
    // bookkeeping: the format phase less what the same loop costs storing a constant (grow).
    double rowTruth = Math.max(0, truth.get("format") - truth.get("grow"));
    double rowOurs = withRow / (double) n;
    assertTrue(rowOurs >= rowTruth - margin(rowTruth, n), String.format(
        "row in %.3f of the samples, the program spent %.3f in it (margin %.3f): %s%s",
        rowOurs, rowTruth, margin(rowTruth, n), summary, ours.top(8)));
    assertEquals(0, lineZero, "Lua frames at line 0: " + atLineZero + "; " + summary);
  }

  /** Z standard deviations of a share p measured from n samples, plus {@link #SLACK}. */
  static double margin(double p, long n) {
    return Z * Math.sqrt(p * (1 - p) / n) + SLACK;
  }
}
