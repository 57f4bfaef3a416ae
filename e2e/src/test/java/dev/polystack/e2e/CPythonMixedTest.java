package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CPython and LuaJIT in one recording, with the CPython example plug-in
 * (docs/examples/cpython-plugin, built and loaded as CPythonPluginTest does it) beside the
 * built-in LuaJIT one: a C program that embeds Debian's libpython3.11 and libluajit-5.1 and runs
 * both interpreters on one thread or on one thread each; one process that execs from Python
 * into luajit and back; and Python threads that start once the recording runs. Every Python and
 * Lua frame must be named and stand where its interpreter's native frames were (Python -> C ->
 * Lua and Lua -> C -> Python included), and the samples must share out as the programs' own CPU
 * clocks do.
 */
class CPythonMixedTest {
  /**
   * The share of stacks a rare event may spoil (a walk that caught a frame changing under it,
   * an unwind that did not finish: an error frame either way): 2%, plus what chance adds at the
   * sample count (SamplingNoise).
   */
  static final double RARE = 0.02;
  /**
   * The class's 23 statistical assertions share a tenth of a SamplingNoise class's budget
   * (5.0e-5 per run in all), as LuaJitAllocationTest does, so that the suite stays below one
   * chance failure in 200 runs (docs/testing.md, "Bounds and their false-failure rates").
   */
  static final double ALPHA = SamplingNoise.alpha(23) / 10;

  static final Path PYTHON = Path.of("/usr/bin/python3.11");
  static final Path LUAJIT = Path.of("/usr/bin/luajit");
  private static final Pattern THREAD_ROOT = Pattern.compile(".* \\(tid (\\d+)\\)");
  private static final Pattern NUMBER = Pattern.compile("\"([\\w.]+)\": (\\d+)");

  @TempDir static Path dir;
  private static Path pluginDir;
  private static Path mixed;
  private static Path mixedPy;
  private static Path mixedLua;

  @BeforeAll
  static void build() throws Exception {
    assumeTrue(Files.isExecutable(PYTHON), "Debian's python3.11 not installed");
    assumeTrue(Files.isExecutable(LUAJIT), "needs the luajit package (/usr/bin/luajit)");
    pluginDir = CPythonExample.build(dir).pluginDir();

    Path source = resource("mixed.c");
    mixedPy = resource("mixed.py");
    mixedLua = resource("mixed.lua");
    mixed = dir.resolve("mixed");
    // Plain flags, not python3.11-config: the one on PATH may be pyenv's, for another
    // libpython. Not stripped, so call_python and call_lua resolve by symbol.
    Process gcc = new ProcessBuilder("gcc", "-O2", "-g", "-o", mixed.toString(),
        source.toString(), "-I/usr/include/python3.11", "-I/usr/include/luajit-2.1",
        "-lpython3.11", "-lluajit-5.1", "-lpthread").redirectErrorStream(true).start();
    String log = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(gcc.waitFor(60, TimeUnit.SECONDS), "gcc did not finish");
    assertEquals(0, gcc.exitValue(), "gcc failed (libpython3.11-dev or libluajit-5.1-dev"
        + " missing? ./run-tests installs them): " + log);
  }

  /**
   * One thread calls a Python function and a Lua function in turn: each sample shows one
   * interpreter's frames, spliced where its evaluation loop or VM ran under the C host's own
   * call_python or call_lua, and the two share the samples as they share the thread's CPU time.
   */
  @Test
  void pythonAndLuaTakeTurnsOnOneThread() throws Exception {
    Path work = Files.createTempDirectory(dir, "alternate");
    Recording r = recordMixed(work, "alternate", List.of());
    Measured m = measure(r.stacks(), null);
    String context = m.summary(r) + r.context();
    System.out.println("CPythonMixedTest alternate: " + m.summary(r));
    checkShares(m, r, context);
  }

  /**
   * One thread calls Python, which calls Lua through a C function of the host, and Lua, which
   * calls Python through another: each stack shows both interpreters' frames in call order, each
   * set where its own evaluation loop or VM ran, with the host's C frames between them.
   */
  @Test
  void pythonCallsLuaAndLuaCallsPythonThroughC() throws Exception {
    Path work = Files.createTempDirectory(dir, "nested");
    Recording r = recordMixed(work, "nested", List.of());
    String py = mixedPy.toString();
    String lua = mixedLua.toString();
    String pyOuter = "py_outer (" + py + ":";
    String luaOuter = "function <" + lua + ":" + lineOf(mixedLua, "function lua_outer(n)") + "> ("
        + lua + ":";
    String pyEntry = "py_entry (" + py + ":";
    String luaEntry = "function <" + lua + ":" + lineOf(mixedLua, "function lua_entry(n)")
        + "> (" + lua + ":";
    int pyBurn = lineOf(mixedPy, "def py_burn(n):");
    int luaBurn = lineOf(mixedLua, "function lua_burn(n)");
    long outerPy = 0;
    long outerLua = 0;
    long luaInPy = 0;
    long pyInLua = 0;
    long spoiled = 0;
    for (FoldedStacks.Stack s : r.stacks().stacks()) {
      int po = s.indexOf(f -> f.startsWith(pyOuter));
      int lo = s.indexOf(f -> f.startsWith(luaOuter));
      int cp = s.indexOf("call_python"::equals);
      int cl = s.indexOf("call_lua"::equals);
      boolean pythonFirst = po >= 0 && (lo < 0 || po < lo);
      if (po < 0 && lo < 0) {
        continue; // warming up, starting, ending: not measured
      }
      if (s.has(CPythonMixedTest::isError)) {
        spoiled += s.count();
        continue;
      }
      List<String> f = s.frames();
      assertFalse(s.has("_PyEval_EvalFrameDefault"::equals),
          "the evaluation loop's native frame must be replaced: " + s);
      if (pythonFirst) {
        // call_python -> py_outer [-> host_lua -> call_lua -> lua_pcall -> lua_entry].
        assertTrue(cp >= 0 && cp < po && nativeBetween(f, cp, po),
            "Python frames out of place: " + s);
        int le = s.indexOf(x -> x.startsWith(luaEntry));
        if (le >= 0) {
          int h = s.indexOf("host_lua"::equals);
          int p = s.indexOf("lua_pcall"::equals);
          assertTrue(po < h && h < cl && cl < p && p < le && nativeBetween(f, po, le),
              "Lua frames out of place in Python: " + s);
          checkLeaf(s, le, "lua_burn (" + lua + ":", luaBurn, luaBurn + 6);
          luaInPy += s.count();
        } else {
          assertFalse(s.has(CPythonMixedTest::isLua), "Lua frames out of place: " + s);
          checkLeaf(s, po, "py_burn (" + py + ":", pyBurn, pyBurn + 3);
        }
        outerPy += s.count();
      } else {
        // call_lua -> lua_pcall -> lua_outer [-> c_python -> call_python -> py_entry].
        int p = s.indexOf("lua_pcall"::equals);
        assertTrue(cl >= 0 && cl < p && p < lo && nativeBetween(f, cl, lo),
            "Lua frames out of place: " + s);
        int pe = s.indexOf(x -> x.startsWith(pyEntry));
        if (pe >= 0) {
          int c = s.indexOf("c_python"::equals);
          assertTrue(lo < c && c < cp && cp < pe && nativeBetween(f, lo, pe),
              "Python frames out of place in Lua: " + s);
          checkLeaf(s, pe, "py_burn (" + py + ":", pyBurn, pyBurn + 3);
          pyInLua += s.count();
        } else {
          assertFalse(s.has(CPythonMixedTest::isPython), "Python frames out of place: " + s);
          checkLeaf(s, lo, "lua_burn (" + lua + ":", luaBurn, luaBurn + 6);
        }
        outerLua += s.count();
      }
    }
    Measured m = new Measured(outerPy, outerLua, spoiled);
    String context = m.summary(r) + "; Lua in Python " + luaInPy + ", Python in Lua " + pyInLua
        + String.format(" (own shares %.3f, %.3f)", (double) r.ownLuaInPy() / r.ownPy(),
            (double) r.ownPyInLua() / r.ownLua()) + r.context();
    System.out.println("CPythonMixedTest nested: " + context.lines().findFirst().orElse(""));
    checkShares(m, r, context);
    checkShare(r.eff(luaInPy), r.eff(outerPy), (double) r.ownLuaInPy() / r.ownPy(),
        "the share of Python's samples in Lua called from it", context);
    checkShare(r.eff(pyInLua), r.eff(outerLua), (double) r.ownPyInLua() / r.ownLua(),
        "the share of Lua's samples in Python called from it", context);
  }

  /**
   * py-worker runs Python and lua-worker runs Lua at the same time: a thread's stacks carry its
   * own interpreter's frames only, and the two threads share the samples as their CPU clocks
   * say.
   */
  @Test
  void pythonAndLuaOnAThreadEach() throws Exception {
    Path work = Files.createTempDirectory(dir, "threads");
    Recording r = recordMixed(work, "threads", List.of("--per-thread"));
    Map<Integer, List<FoldedStacks.Stack>> byThread = byThread(r.stacks());
    Set<Integer> pythonThreads = new TreeSet<>();
    Set<Integer> luaThreads = new TreeSet<>();
    byThread.forEach((tid, stacks) -> {
      if (stacks.stream().anyMatch(s -> s.has(CPythonMixedTest::isPython))) {
        pythonThreads.add(tid);
      }
      if (stacks.stream().anyMatch(s -> s.has(CPythonMixedTest::isLua))) {
        luaThreads.add(tid);
      }
    });
    String threads = "threads with Python frames " + pythonThreads + ", with Lua frames "
        + luaThreads + r.context();
    assertEquals(1, pythonThreads.size(), threads);
    assertEquals(1, luaThreads.size(), threads);
    assertFalse(pythonThreads.equals(luaThreads), "one thread with both interpreters' frames: "
        + threads);
    int py = pythonThreads.iterator().next();
    int lua = luaThreads.iterator().next();
    Measured m = measure(r.stacks(), Map.of(py, "py", lua, "lua"));
    String context = m.summary(r) + r.context();
    System.out.println("CPythonMixedTest threads: " + m.summary(r));
    checkShares(m, r, context);
  }

  /**
   * One process execs from Python into luajit and back into Python: its recording holds the
   * first Python phase, the Lua phase with its functions named, and the second Python phase,
   * all in the one process the program reported, each sharing the samples as it used the CPU.
   */
  @Test
  void execFromPythonIntoLuaJitAndBack() throws Exception {
    Path work = Files.createTempDirectory(dir, "exec");
    Path program = copy("exec_chain.py", work);
    Path script = copy("exec_chain.lua", work);
    Path log = work.resolve("phases.txt");
    Recording r = record(work, List.of("--per-thread"), PYTHON.toString(), program.toString(),
        LUAJIT.toString(), script.toString(), "1", log.toString());
    // PHASE PID CPU_NS, one line per phase.
    Map<String, long[]> phases = new LinkedHashMap<>();
    for (String line : Files.readAllLines(log)) {
      String[] f = line.split(" ");
      phases.put(f[0], new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])});
    }
    assertEquals(List.of("py_before", "lua_phase", "py_after"), List.copyOf(phases.keySet()),
        "the program did not run its three phases: " + phases.keySet() + r.context());
    long pid = phases.get("py_before")[0];
    assertTrue(phases.values().stream().allMatch(p -> p[0] == pid),
        "the phases ran in different processes: " + r.context());
    // Single-threaded phases: every stack is the main thread's, whose tid is the pid.
    Set<Integer> tids = byThread(r.stacks()).keySet();
    assertEquals(Set.of((int) pid), tids, "stacks of other threads than " + pid + r.context());

    String py = program.toString();
    String lua = script.toString();
    int burnDef = lineOf(program, "def burn(seconds):");
    int spinDef = lineOf(script, "local function spin(n)");
    int phaseDef = lineOf(script, "function lua_phase(seconds)");
    Map<String, Predicate<FoldedStacks.Stack>> isPhase = Map.of(
        "py_before", s -> s.has(f -> f.startsWith("py_before (" + py + ":")),
        "lua_phase", s -> s.has(f -> f.startsWith("lua_phase (" + lua + ":")),
        "py_after", s -> s.has(f -> f.startsWith("py_after (" + py + ":")));
    Map<String, Long> counts = new LinkedHashMap<>();
    Map<String, Long> errors = new HashMap<>();
    // luajit's main runs everything through lua_cpcall: a stack of it outside lua_phase with an
    // error frame, or without a frame of the script, lost its Lua frames (one in the script's
    // main chunk, starting or about to exec, did not).
    errors.put("lua_phase", r.stacks().count(s -> s.has("lua_cpcall"::equals)
        && !isPhase.get("lua_phase").test(s)
        && (s.has(CPythonMixedTest::isError) || !s.has(CPythonMixedTest::isLua))));
    for (String phase : phases.keySet()) {
      List<FoldedStacks.Stack> stacks = r.stacks().where(isPhase.get(phase));
      for (FoldedStacks.Stack s : stacks) {
        if (s.has(CPythonMixedTest::isError)) {
          errors.merge(phase, s.count(), Long::sum);
          continue;
        }
        List<String> f = s.frames();
        if (phase.equals("lua_phase")) {
          // luajit's own main runs the chunk through lua_pcall; lua_phase calls spin.
          int pcall = s.indexOf("lua_pcall"::equals);
          int chunk = s.indexOf(x -> x.startsWith("main chunk (" + lua + ":"));
          int at = s.indexOf(x -> x.startsWith("lua_phase (" + lua + ":"));
          assertTrue(pcall >= 0 && pcall < chunk && chunk + 1 == at
              && nativeBetween(f, pcall, chunk), "Lua frames out of place: " + s);
          assertFalse(s.has(CPythonMixedTest::isPython), "Python frames in luajit: " + s);
          if (at + 1 < f.size() && !isNative(f.get(at + 1))) {
            FoldedStacks.LuaFrame spin = FoldedStacks.LuaFrame.parse(f.get(at + 1));
            assertTrue(spin != null && spin.name().equals("spin") && spin.chunk().equals(lua)
                && spin.line() >= spinDef && spin.line() <= spinDef + 5, "not spin: " + s);
          }
          int line = FoldedStacks.LuaFrame.parse(f.get(at)).line();
          assertTrue(line >= phaseDef && line <= phaseDef + 7, "line " + line
              + " is not in lua_phase: " + s);
        } else {
          // phase() under the phase's function, <module> under it, the native
          // PyEval_EvalCode that entered the evaluation loop under that.
          int at = s.indexOf(x -> x.startsWith(phase + " (" + py + ":"));
          assertTrue(at >= 3 && f.get(at - 1).startsWith("phase (" + py + ":")
              && f.get(at - 2).startsWith("<module> (" + py + ":")
              && f.get(at - 3).equals("PyEval_EvalCode"), "Python frames out of place: " + s);
          assertFalse(s.has(CPythonMixedTest::isLua), "Lua frames in Python: " + s);
          assertFalse(s.has("_PyEval_EvalFrameDefault"::equals),
              "the evaluation loop's native frame must be replaced: " + s);
          if (at + 1 < f.size() && !isNative(f.get(at + 1))) {
            int line = lineOf(f.get(at + 1), "burn (" + py + ":");
            assertTrue(line >= burnDef && line <= burnDef + 5, "line " + line
                + " is not in burn: " + s);
          }
        }
        counts.merge(phase, s.count(), Long::sum);
      }
    }
    long lost = r.number("learning_walk");
    long total = counts.values().stream().mapToLong(Long::longValue).sum();
    long cpu = phases.values().stream().mapToLong(p -> p[1]).sum();
    String context = "samples by phase " + counts + ", with an error frame or (luajit) without"
        + " lua_phase " + errors + ", lost while learning " + lost + ", frames named from cached"
        + " code objects " + r.number("plugin.cpython.code_freed_since_tick") + ", CPU ns by phase "
        + phases.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()[1]).toList()
        + r.context();
    System.out.println("CPythonMixedTest exec: " + context.lines().findFirst().orElse(""));
    for (String phase : phases.keySet()) {
      long named = counts.getOrDefault(phase, 0L);
      long spoiled = errors.getOrDefault(phase, 0L);
      assertTrue(r.eff(spoiled) <= SamplingNoise.binomialUpper(r.eff(named + spoiled), RARE,
          ALPHA), phase + ": too many stacks without its frames: " + context);
      // A phase's share of the samples is its share of the CPU time; the samples lost while
      // polystack learned a new program's stack may all have been this phase's.
      double share = (double) phases.get(phase)[1] / cpu;
      assertTrue(r.eff(named + lost) >= SamplingNoise.binomialLower(r.eff(total + lost), share,
          ALPHA), phase + ": fewer samples than its CPU time gives: " + context);
    }
  }

  /**
   * Python threads that start a second after the recording began are walked as any other:
   * their frames named, under Thread.run, and they share the samples as their CPU clocks say.
   */
  @Test
  void pythonThreadsStartedLaterAreNamed() throws Exception {
    Path work = Files.createTempDirectory(dir, "late");
    Path program = copy("late_threads.py", work);
    Path log = work.resolve("threads.txt");
    Recording r = record(work, List.of("--per-thread"), PYTHON.toString(), program.toString(),
        "1", "1.5", log.toString());
    // NAME TID CPU_NS, one line per late thread.
    Map<String, long[]> threads = new LinkedHashMap<>();
    for (String line : Files.readAllLines(log)) {
      String[] f = line.split(" ");
      threads.put(f[0], new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])});
    }
    assertEquals(Set.of("late_a", "late_b"), threads.keySet(), r.context());
    String py = program.toString();
    int burnDef = lineOf(program, "def burn(seconds):");
    Map<Integer, List<FoldedStacks.Stack>> byThread = byThread(r.stacks());
    Map<String, Long> named = new LinkedHashMap<>();
    Map<String, Long> all = new LinkedHashMap<>();
    for (var t : threads.entrySet()) {
      String name = t.getKey();
      List<FoldedStacks.Stack> stacks = byThread.getOrDefault((int) t.getValue()[0], List.of());
      long n = 0;
      for (FoldedStacks.Stack s : stacks) {
        all.merge(name, s.count(), Long::sum);
        int at = s.indexOf(f -> f.startsWith(name + " (" + py + ":"));
        if (at < 0 || s.has(CPythonMixedTest::isError)) {
          continue; // bounded below
        }
        List<String> f = s.frames();
        assertTrue(s.has(x -> x.startsWith("Thread.run (")), "no Thread.run under " + name
            + ": " + s);
        assertTrue(s.indexOf(x -> x.startsWith("Thread.run (")) < at, s.toString());
        assertFalse(s.has("_PyEval_EvalFrameDefault"::equals),
            "the evaluation loop's native frame must be replaced: " + s);
        assertFalse(s.has(x -> x.startsWith("<module> (")), "the main thread's frames: " + s);
        if (at + 1 < f.size() && !isNative(f.get(at + 1))) {
          int line = lineOf(f.get(at + 1), "burn (" + py + ":");
          assertTrue(line >= burnDef && line <= burnDef + 5, "line " + line
              + " is not in burn: " + s);
        }
        n += s.count();
      }
      named.put(name, n);
    }
    long a = named.get("late_a");
    long b = named.get("late_b");
    double share = (double) threads.get("late_a")[1]
        / (threads.get("late_a")[1] + threads.get("late_b")[1]);
    String context = "named samples by thread " + named + " of " + all + ", late_a's CPU share "
        + String.format("%.3f", share) + r.context();
    System.out.println("CPythonMixedTest late threads: "
        + context.lines().findFirst().orElse(""));
    for (String name : named.keySet()) {
      long unnamed = all.getOrDefault(name, 0L) - named.get(name);
      assertTrue(r.eff(unnamed) <= SamplingNoise.binomialUpper(r.eff(all.get(name)), RARE,
          ALPHA), name + ": too many samples without its Python frames: " + context);
    }
    checkShare(r.eff(a), r.eff(a + b), share, "late_a's share of late_a and late_b", context);
  }

  /** One record of the mixed host in {@code mode}, 1.5 s of measured CPU per thread. */
  private static Recording recordMixed(Path work, String mode, List<String> options)
      throws Exception {
    Path times = work.resolve("times.txt");
    Recording r = record(work, options, mixed.toString(), mode, mixedPy.toString(),
        mixedLua.toString(), "1.5", times.toString());
    long[] own = Stream.of(Files.readString(times).strip().split(" "))
        .mapToLong(Long::parseLong).toArray();
    return r.withOwn(own[0], own[1], own[2], own[3]);
  }

  /**
   * The samples of py_entry and lua_entry (by thread when {@code threads} names them), each
   * checked for where its frames stand; stacks with an error frame are counted apart.
   */
  private static Measured measure(FoldedStacks stacks, Map<Integer, String> threads)
      throws IOException {
    String py = mixedPy.toString();
    String lua = mixedLua.toString();
    int pyBurn = lineOf(mixedPy, "def py_burn(n):");
    int pyEntry = lineOf(mixedPy, "def py_entry(n):");
    int luaBurn = lineOf(mixedLua, "function lua_burn(n)");
    int luaEntry = lineOf(mixedLua, "function lua_entry(n)");
    // Called from C, lua_entry has no calling bytecode to name it: LuaJIT's anonymous form.
    String luaEntryName = "function <" + lua + ":" + luaEntry + ">";
    long pySamples = 0;
    long luaSamples = 0;
    long spoiled = 0;
    long both = 0;
    for (FoldedStacks.Stack s : stacks.stacks()) {
      boolean hasPy = s.has(CPythonMixedTest::isPython);
      boolean hasLua = s.has(CPythonMixedTest::isLua);
      if (hasPy && hasLua) {
        both += s.count();
      }
      int pe = s.indexOf(f -> f.startsWith("py_entry (" + py + ":"));
      int le = s.indexOf(f -> f.startsWith(luaEntryName + " (" + lua + ":"));
      if (pe < 0 && le < 0) {
        continue; // warming up, starting, ending: not measured
      }
      if (s.has(CPythonMixedTest::isError)) {
        spoiled += s.count();
        continue;
      }
      if (threads != null) {
        String owner = threads.get(tidOf(s));
        assertEquals(pe >= 0 ? "py" : "lua", owner, "a measured stack on the wrong thread: " + s);
      }
      List<String> f = s.frames();
      if (pe >= 0) {
        // call_python -> the C API -> the evaluation loop's Python frames -> native leaves.
        int c = s.indexOf("call_python"::equals);
        assertTrue(c >= 0 && c < pe && nativeBetween(f, c, pe), "Python frames out of place: "
            + s);
        assertFalse(hasLua, "Lua frames on a Python stack: " + s);
        assertFalse(s.has("_PyEval_EvalFrameDefault"::equals),
            "the evaluation loop's native frame must be replaced: " + s);
        int line = lineOf(f.get(pe), "py_entry (" + py + ":");
        assertTrue(line >= pyEntry && line <= pyEntry + 2, "line " + line + " is not in"
            + " py_entry: " + s);
        checkLeaf(s, pe, "py_burn (" + py + ":", pyBurn, pyBurn + 3);
        pySamples += s.count();
      } else {
        // call_lua -> lua_pcall -> the VM's Lua frames -> native leaves.
        int c = s.indexOf("call_lua"::equals);
        int p = s.indexOf("lua_pcall"::equals);
        assertTrue(c >= 0 && c < p && p < le && nativeBetween(f, c, le),
            "Lua frames out of place: " + s);
        assertFalse(hasPy, "Python frames on a Lua stack: " + s);
        int line = FoldedStacks.LuaFrame.parse(f.get(le)).line();
        assertTrue(line >= luaEntry && line <= luaEntry + 2, "line " + line + " is not in"
            + " lua_entry: " + s);
        checkLeaf(s, le, "lua_burn (" + lua + ":", luaBurn, luaBurn + 6);
        luaSamples += s.count();
      }
    }
    assertEquals(0, both, "stacks with Python and Lua frames both" + stacks.top(10));
    return new Measured(pySamples, luaSamples, spoiled);
  }

  /**
   * Above the entry frame at {@code at}: the burning function at a line of its body, then
   * native frames only; or native frames only (the entry's own code calling it).
   */
  private static void checkLeaf(FoldedStacks.Stack s, int at, String burnPrefix, int from,
      int to) {
    List<String> f = s.frames();
    int next = at + 1;
    if (next < f.size() && f.get(next).startsWith(burnPrefix)) {
      int line = lineOf(f.get(next), burnPrefix);
      assertTrue(line >= from && line <= to, "line " + line + " is not in the body of "
          + burnPrefix + "): " + s);
      next++;
    }
    for (int i = next; i < f.size(); i++) {
      assertTrue(isNative(f.get(i)), "not a native frame above the interpreter's: " + s);
    }
  }

  private static void checkShares(Measured m, Recording r, String context) {
    long spoiled = m.spoiled();
    long measured = m.py() + m.lua();
    // 1.5 s of CPU at 199 Hz is ~300 samples: a third of that is samples gone, not chance.
    assertTrue(measured >= 100, "too few measured samples: " + context);
    assertTrue(r.eff(spoiled) <= SamplingNoise.binomialUpper(r.eff(measured + spoiled), RARE,
        ALPHA), "too many measured stacks with an error frame: " + context);
    double own = (double) r.ownPy() / (r.ownPy() + r.ownLua());
    checkShare(r.eff(m.py()), r.eff(measured), own, "Python's share", context);
  }

  /** {@code k} of {@code n} independent samples, for a share claimed to be {@code p}. */
  private static void checkShare(long k, long n, double p, String what, String context) {
    long lower = SamplingNoise.binomialLower(n, p, ALPHA);
    long upper = SamplingNoise.binomialUpper(n, p, ALPHA);
    assertTrue(k >= lower, what + ": " + k + " of " + n + " below " + lower + " for a share of "
        + String.format("%.3f", p) + ": " + context);
    assertTrue(k <= upper, what + ": " + k + " of " + n + " above " + upper + " for a share of "
        + String.format("%.3f", p) + ": " + context);
  }

  /** Python and Lua measured samples, and measured stacks carrying an error frame. */
  private record Measured(long py, long lua, long spoiled) {
    String summary(Recording r) {
      return String.format("Python %d, Lua %d measured samples (Python's share %.3f, its own"
          + " CPU share %.3f), %d with an error frame", py, lua, (double) py / (py + lua),
          (double) r.ownPy() / (r.ownPy() + r.ownLua()), spoiled);
    }
  }

  /**
   * A record's folded stacks, its --stats-json numbers, stderr, and the mixed host's own CPU
   * times (mixed.c's OUT) when it measured them.
   */
  private record Recording(FoldedStacks stacks, Map<String, Long> numbers, String stderr,
      long ownPy, long ownLua, long ownLuaInPy, long ownPyInLua) {
    Recording withOwn(long py, long lua, long luaInPy, long pyInLua) {
      return new Recording(stacks, numbers, stderr, py, lua, luaInPy, pyInLua);
    }

    long number(String key) {
      return numbers.getOrDefault(key, 0L);
    }

    /**
     * Folded counts are periods: a sample that also stands for a tick not taken counts 2, so
     * {@code periods} are worth this many independent samples (SamplingNoise).
     */
    long eff(long periods) {
      return Math.round(periods * SamplingNoise.effectivePerPeriod(number("samples"),
          number("periods")));
    }

    String context() {
      return "\nsamples " + number("samples") + ", periods " + number("periods")
          + "; own CPU ns: Python " + ownPy + ", Lua " + ownLua + " (Lua in Python "
          + ownLuaInPy + ", Python in Lua " + ownPyInLua + ")" + stacks.top(12) + "\n" + stderr;
    }
  }

  private static Recording record(Path work, List<String> options, String... command)
      throws Exception {
    Path folded = work.resolve("out.folded");
    Path stats = work.resolve("stats.json");
    List<String> args = new ArrayList<>(List.of("record", "--plugin-path", pluginDir.toString(),
        "--rate", "199", "-v", "--stats-json", stats.toString(), "-o", folded.toString()));
    args.addAll(options);
    args.add("--");
    args.addAll(List.of(command));
    var result = Distribution.run(work, Map.of(), args.toArray(String[]::new));
    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stderr().contains("target exited with code 0"), result.stderr());
    assertTrue(result.stderr().contains("target never stopped (bpf mode)"), result.stderr());
    Map<String, Long> numbers = new HashMap<>();
    Matcher m = NUMBER.matcher(Files.readString(stats));
    while (m.find()) {
      numbers.putIfAbsent(m.group(1), Long.parseLong(m.group(2)));
    }
    return new Recording(FoldedStacks.read(folded), Map.copyOf(numbers), result.stderr(), 0, 0,
        0, 0);
  }

  private static Map<Integer, List<FoldedStacks.Stack>> byThread(FoldedStacks stacks) {
    Map<Integer, List<FoldedStacks.Stack>> out = new HashMap<>();
    for (FoldedStacks.Stack s : stacks.stacks()) {
      out.computeIfAbsent(tidOf(s), k -> new ArrayList<>()).add(s);
    }
    return out;
  }

  /** The tid of --per-thread's root frame, {@code NAME (tid N)}. */
  private static int tidOf(FoldedStacks.Stack s) {
    Matcher m = THREAD_ROOT.matcher(s.frames().get(0));
    assertTrue(m.matches(), "no thread root frame: " + s);
    return Integer.parseInt(m.group(1));
  }

  /** A Python frame: {@code qualname (FILE.py:LINE)}. */
  static boolean isPython(String frame) {
    FoldedStacks.LuaFrame f = FoldedStacks.LuaFrame.parse(frame);
    return f != null && f.chunk().endsWith(".py");
  }

  /** A Lua frame of a script: {@code name (FILE.lua:LINE)}. */
  static boolean isLua(String frame) {
    FoldedStacks.LuaFrame f = FoldedStacks.LuaFrame.parse(frame);
    return f != null && f.chunk().endsWith(".lua");
  }

  static boolean isError(String frame) {
    return frame.startsWith("[error:");
  }

  /** Neither a Python nor a Lua frame, nor an error frame. */
  static boolean isNative(String frame) {
    return !isPython(frame) && !isLua(frame) && !isError(frame);
  }

  /** The frames strictly between {@code from} and {@code to} are native. */
  private static boolean nativeBetween(List<String> frames, int from, int to) {
    return frames.subList(from + 1, to).stream().allMatch(CPythonMixedTest::isNative);
  }

  /** The line of a frame {@code PREFIX...LINE)}: what follows the last colon. */
  private static int lineOf(String frame, String prefix) {
    assertTrue(frame.startsWith(prefix) && frame.endsWith(")"), "not " + prefix + "...): "
        + frame);
    return Integer.parseInt(frame.substring(frame.lastIndexOf(':') + 1, frame.length() - 1));
  }

  /** 1-based line of the first line of {@code file} containing {@code text}. */
  private static int lineOf(Path file, String text) throws IOException {
    List<String> lines = Files.readAllLines(file);
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).contains(text)) {
        return i + 1;
      }
    }
    throw new AssertionError("no '" + text + "' in " + file);
  }

  private static Path resource(String name) throws IOException {
    return copy(name, dir);
  }

  private static Path copy(String name, Path to) throws IOException {
    Path target = to.resolve(name);
    try (InputStream in = CPythonMixedTest.class.getResourceAsStream("/mixed-targets/" + name)) {
      if (in == null) {
        throw new IllegalStateException("missing test resource mixed-targets/" + name);
      }
      Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
    }
    return target;
  }

}
