package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * polystack against LuaJIT's own profiler on real Lua programs, on upstream and OpenResty
 * builds: where the time goes (the leaf-most Lua line), how often a sample taken while Lua runs
 * has a Lua frame, and which names the frames get.
 *
 * <p>The two profilers run the same workload in two separate processes at the same time (the
 * suite has to stay short on a small machine; contention slows both runs alike and leaves the
 * distribution of CPU time alone). Workloads do a fixed amount of work, never a time loop:
 * os.clock() is a syscall and would show up in both profiles as time spent in C.
 */
class LuaJitAccuracyTest {
  static final double MIN_OVERLAP = 0.85;
  static final double MIN_LUA_FRAME_SHARE = 0.95;
  /** Too few samples make the overlap noise, not a measurement. */
  static final long MIN_SAMPLES = 150;

  /**
   * One workload. {@code jit} false runs it with {@code -joff} in both profilers: jit.p (mode l)
   * adds a guard per line to the traces it profiles and reports the exact line it exits from,
   * while polystack reads unchanged traces, whose snapshots only exist at guards (inlined
   * callees are rebuilt from them: LuaJitTraceFramesTest). The workloads about call structure
   * and lines are compared in the interpreter (gc_pressure too: its allocating callee would be
   * inlined); jit_hot keeps the JIT on with single-line loops, where both agree.
   */
  record Workload(String script, boolean jit, List<String> names) {
    @Override
    public String toString() {
      return script + (jit ? "" : " -joff");
    }
  }

  static final List<Workload> WORKLOADS = List.of(
      new Workload("recursion.lua", false, List.of("fib", "depth")),
      new Workload("methods.lua", false, List.of("deposit", "withdraw", "helper",
          "string.format")),
      new Workload("closures.lua", false, List.of("mix", "function <closures.lua:10>")),
      new Workload("metamethods.lua", false, List.of("__add", "__index",
          // A __call handler is named by the slot its CALL reads (lj_debug_funcname gives
          // "__call" only to metamethods reached by non-call instructions): here `Acc`.
          "Acc")),
      new Workload("coroutines.lua", false, List.of("consume", "coroutine.resume",
          "function <coroutines.lua:3>")),
      new Workload("errors.lua", false, List.of("risky", "pcall", "error")),
      new Workload("callbacks.lua", false, List.of("by_weight", "shout", "table.sort",
          "string.gsub")),
      new Workload("jit_hot.lua", true, List.of("main chunk")),
      new Workload("gc_pressure.lua", false, List.of("make_record")),
      // Returns that store their results over their own frame (string.byte's many results, a
      // Lua function returning eight values): walked from the caller, never an error frame.
      new Workload("returns.lua", false, List.of("spread", "main chunk")));

  @TempDir Path dir;

  static Stream<Arguments> cases() throws Exception {
    List<Arguments> out = new ArrayList<>();
    for (String build : List.of("upstream", "openresty")) {
      for (Workload w : WORKLOADS) {
        out.add(Arguments.of(build, w));
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "[{index}] {0} {1}")
  @MethodSource("cases")
  void leafLinesMatchJitPAndFramesAreNamed(String buildName, Workload w) throws Exception {
    LuaJitBuild build = buildName.equals("upstream") ? LuaJitBuild.upstream()
        : LuaJitBuild.openResty();
    copyScript(w.script());
    List<String> args = new ArrayList<>();
    if (!w.jit()) {
      args.add("-joff");
    }

    // Ground truth: jit.p, l = file:current line, r = raw counts, i2 = a sample every 2 ms (its
    // default 10 ms gives too few in a few seconds), m0 = every key.
    List<String> jitp = new ArrayList<>(args);
    jitp.add(0, "-jp=lri2m0,jitp.txt");
    jitp.add(w.script());
    Process reference = new ProcessBuilder(build.command(jitp.toArray(String[]::new)))
        .directory(dir.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(dir.resolve("jitp.err").toFile())
        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile())).start();
    // 199 Hz: enough samples in a few seconds for the shares to be measurements, not noise.
    List<String> record = new ArrayList<>(List.of("record", "--rate", "199", "--format",
        "folded", "-o",
        "out.folded", "--", build.executable().toString()));
    record.addAll(args);
    record.add(w.script());
    Distribution.Result result;
    try {
      result = Distribution.run(dir, build.env(), record.toArray(String[]::new));
    } finally {
      if (!reference.waitFor(120, TimeUnit.SECONDS)) {
        reference.destroyForcibly();
        throw new AssertionError("luajit -jp " + w.script() + " did not finish in 120 s");
      }
    }
    assertEquals(0, result.exitCode(), result.stderr());
    assertEquals(0, reference.exitValue(), Files.readString(dir.resolve("jitp.err")));

    String folded = Files.readString(dir.resolve("out.folded"));
    LeafLines ours = LeafLines.fromFolded(folded);
    LeafLines theirs = LeafLines.fromJitP(Files.readString(dir.resolve("jitp.txt")));
    double overlap = ours.overlap(theirs);
    String summary = String.format("%s %s: overlap %.3f, Lua-frame share %.3f (%d/%d);"
        + "%n  polystack%s%n  jit.p    %s%n  %s", build, w, overlap, ours.luaFrameShare(),
        ours.whileLuaRunsWithLua, ours.whileLuaRuns, ours.top(6), theirs.top(6),
        result.stderrLines().stream().filter(l -> !l.contains("wrote") && !l.contains("Hz"))
            .collect(Collectors.joining("; ")));
    log(summary);
    assertTrue(ours.luaSamples() >= MIN_SAMPLES, "too few samples: " + summary);
    assertTrue(theirs.luaSamples() >= MIN_SAMPLES, "too few jit.p samples: " + summary);
    assertTrue(ours.luaFrameShare() >= MIN_LUA_FRAME_SHARE, summary);
    assertTrue(overlap >= MIN_OVERLAP, summary);

    Set<String> names = frameNames(folded);
    for (String expected : w.names()) {
      assertTrue(names.contains(expected), "no frame named '" + expected + "' in " + build + " "
          + w + "; names seen: " + names);
    }
  }

  /** Function names of all frames: Lua frames without their (chunk:line), builtins as is. */
  static Set<String> frameNames(String folded) {
    return folded.lines().filter(l -> !l.isBlank())
        .flatMap(l -> Stream.of(l.substring(0, l.lastIndexOf(' ')).split(";")))
        .map(f -> {
          var m = LeafLines.LUA_FRAME.matcher(f);
          return m.matches() ? m.group(1) : f;
        })
        .collect(Collectors.toCollection(java.util.TreeSet::new));
  }

  private void copyScript(String script) throws IOException {
    try (InputStream in = getClass().getResourceAsStream("/lua/" + script)) {
      if (in == null) {
        throw new IllegalStateException("missing test resource lua/" + script);
      }
      Files.copy(in, dir.resolve(script));
    }
  }

  /** The measured numbers, kept in e2e/target for whoever tunes thresholds or workloads. */
  private static synchronized void log(String summary) throws IOException {
    System.out.println(summary);
    Files.writeString(Distribution.root().resolve("e2e/target/luajit-accuracy.txt"),
        summary + System.lineSeparator(), StandardCharsets.UTF_8, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
