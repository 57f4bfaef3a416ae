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
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Samples on JIT traces show the Lua frames the trace inlined, placed by the trace's snapshots:
 * jit_inlined.lua's hot loop runs one trace into which mix and lookup are inlined, so no frame
 * of theirs exists on the Lua stack, yet the stack must read main chunk, mix, lookup with the
 * lines of the calls. Ground truth for where the time goes is jit.p in function mode (f), which
 * restores the same frames at its trace exits.
 */
class LuaJitTraceFramesTest {
  /** Lines of jit_inlined.lua. */
  private static final int LOOKUP_FIRST = 5;
  private static final int LOOKUP_LAST = 9;
  private static final int MIX_CALLS_LOOKUP = 11;
  private static final int LOOP = 15;
  /**
   * How far the leaf functions of the two profilers may differ beyond chance: jit.p reports a
   * trace at the exit it takes, polystack at the snapshot of the last guard passed.
   */
  static final double SYSTEMATIC = 0.05;
  /** Stacks sampled while a trace is entered or left may miss the inlined frames: 2% of them. */
  static final double MAX_WRONG_SHARE = 0.02;
  static final long MIN_SAMPLES = 150;
  /** 2 cases, 2 statistical assertions each (wrong stacks, overlap); see SamplingNoise. */
  static final double ALPHA = SamplingNoise.alpha(4);

  private static final Pattern JITP_LINE = Pattern.compile("^\\s*(\\d+)\\s+(.+?)\\s*$");

  @TempDir Path dir;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"upstream", "openresty"})
  void inlinedFramesAreRebuiltFromSnapshots(String buildName) throws Exception {
    LuaJitBuild build = buildName.equals("upstream") ? LuaJitBuild.upstream()
        : LuaJitBuild.openResty();
    String script = "jit_inlined.lua";
    try (InputStream in = getClass().getResourceAsStream("/lua/" + script)) {
      Files.copy(in, dir.resolve(script));
    }
    Process reference = new ProcessBuilder(build.command("-jp=fri2m0,jitp.txt", script))
        .directory(dir.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(dir.resolve("jitp.err").toFile())
        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile())).start();
    Distribution.Result result;
    try {
      result = Distribution.run(dir, build.env(), "record", "--rate", "199", "--format",
          "folded", "-o", "out.folded", "--stats-json", "stats.json", "--",
          build.executable().toString(), script);
    } finally {
      if (!reference.waitFor(120, TimeUnit.SECONDS)) {
        reference.destroyForcibly();
        throw new AssertionError("luajit -jp " + script + " did not finish in 120 s");
      }
    }
    assertEquals(0, result.exitCode(), result.stderr());
    assertEquals(0, reference.exitValue(), Files.readString(dir.resolve("jitp.err")));

    FoldedStacks ours = FoldedStacks.read(dir.resolve("out.folded"));
    Map<String, Long> ourLeaves = new TreeMap<>();
    long lua = 0;
    long wrongSamples = 0;
    List<String> wrong = new ArrayList<>();
    for (FoldedStacks.Stack s : ours.stacks()) {
      List<FoldedStacks.LuaFrame> frames = s.luaFrames(script);
      if (frames.isEmpty()) {
        continue;
      }
      lua += s.count();
      FoldedStacks.LuaFrame leaf = frames.get(frames.size() - 1);
      ourLeaves.merge(leaf.name(), s.count(), Long::sum);
      boolean right = frames.get(0).name().equals("main chunk")
          && frames.get(0).line() == LOOP
          && (frames.size() == 1 || (frames.size() == 3
              && frames.get(1).name().equals("mix") && frames.get(1).line() == MIX_CALLS_LOOKUP
              && leaf.name().equals("lookup") && leaf.line() > LOOKUP_FIRST
              && leaf.line() <= LOOKUP_LAST));
      if (!right) {
        wrong.add(s.toString());
        wrongSamples += s.count();
      }
    }
    Map<String, Long> theirLeaves = new TreeMap<>();
    for (String line : Files.readAllLines(dir.resolve("jitp.txt"))) {
      Matcher m = JITP_LINE.matcher(line);
      if (m.matches()) {
        // jit.p names a main chunk by its file and line 0.
        String name = m.group(2).equals(script + ":0") ? "main chunk" : m.group(2);
        theirLeaves.merge(name, Long.parseLong(m.group(1)), Long::sum);
      }
    }
    long theirs = theirLeaves.values().stream().mapToLong(Long::longValue).sum();
    double overlap = 0;
    Map<String, Double> ourShares = new TreeMap<>();
    Map<String, Double> theirShares = new TreeMap<>();
    for (var e : ourLeaves.entrySet()) {
      ourShares.put(e.getKey(), (double) e.getValue() / lua);
      overlap += Math.min((double) e.getValue() / lua,
          (double) theirLeaves.getOrDefault(e.getKey(), 0L) / Math.max(1, theirs));
    }
    theirLeaves.forEach((k, v) -> theirShares.put(k, (double) v / Math.max(1, theirs)));
    // Folded counts are periods: a sample that also stands for a tick not taken counts 2, so a
    // period is worth P / (3P - 2S) independent samples (SamplingNoise.effectivePerPeriod).
    String stats = Files.readString(dir.resolve("stats.json"));
    long samples = number(stats, "samples");
    long periods = number(stats, "periods");
    double weight = SamplingNoise.effectivePerPeriod(samples, periods);
    double nOurs = lua * weight;
    double chance = nOurs < 1 || theirs < 1 ? 1
        : SamplingNoise.tvdBound(ourShares, nOurs, theirShares, theirs, ALPHA);
    double minOverlap = 1 - SYSTEMATIC - chance;
    long maxWrong = SamplingNoise.binomialUpper(Math.max(1, Math.round(nOurs)), MAX_WRONG_SHARE,
        ALPHA);
    String summary = String.format("%s: leaf functions polystack %s of %d, jit.p %s of %d,"
        + " overlap %.3f >= %.3f (1 - %.2f designed - %.3f chance); %s", build, ourLeaves, lua,
        theirLeaves, theirs, overlap, minOverlap, SYSTEMATIC, chance,
        String.join("; ", result.stderrLines()));
    System.out.println(summary);
    assertTrue(lua >= MIN_SAMPLES && theirs >= MIN_SAMPLES, "too few samples: " + summary);
    assertTrue(ourLeaves.getOrDefault("lookup", 0L) * 2 >= lua,
        "the inlined lookup should lead: " + summary + ours.top(5));
    // A rare stack may be sampled while a trace is being entered or left: up to 2% of them,
    // plus what chance adds at this many samples.
    assertTrue(Math.round(wrongSamples * weight) <= maxWrong,
        wrongSamples + " samples not main chunk:" + LOOP + " [-> mix:" + MIX_CALLS_LOOKUP
            + " -> lookup]; first: " + (wrong.isEmpty() ? "" : wrong.get(0)) + "; " + summary);
    assertTrue(overlap >= minOverlap, summary);
  }

  private static long number(String json, String key) {
    Matcher m = Pattern.compile("\"" + key + "\": (\\d+)").matcher(json);
    assertTrue(m.find(), "no " + key + " in " + json);
    return Long.parseLong(m.group(1));
  }
}
