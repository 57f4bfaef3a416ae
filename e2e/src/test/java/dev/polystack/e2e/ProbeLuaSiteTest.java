package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code polystack probe lua:CHUNK:LINE} on upstream LuaJIT and OpenResty's luajit2 running
 * lua-probe/counted.lua: with the JIT off, a read/write watchpoint on each function's first
 * bytecode instruction counts its 2,000 and 20 calls exactly, changes no byte of the watched
 * instruction and sends no signal; with the JIT on, only the calls the interpreter makes are
 * counted (the loop's trace inlines the function), which the test pins to the loop's hot count;
 * polystack killed leaves no watchpoint and the script runs on; what cannot be watched is
 * refused with one line and exit 2.
 */
class ProbeLuaSiteTest {
  private static final int CALLS = 2_000;
  /** LuaJIT's default -Ohotloop: iterations the interpreter runs before a loop is recorded. */
  private static final int HOTLOOP = 56;
  private static final Pattern ADDRESS = Pattern.compile(
      "\"type\":\"site\".*\"site\":\"([^\"]+)\",.*\"address\":\"0x(\\p{XDigit}+)\"");

  @TempDir Path dir;

  @Test
  void upstreamInterpreterCallsAreCountedExactly() throws Exception {
    interpreterCallsAreCountedExactly(LuaJitBuild.upstream());
  }

  @Test
  void openRestyInterpreterCallsAreCountedExactly() throws Exception {
    interpreterCallsAreCountedExactly(LuaJitBuild.openResty());
  }

  private void interpreterCallsAreCountedExactly(LuaJitBuild build) throws Exception {
    Target t = Target.start(build, dir, "-joff");
    try {
      Path output = dir.resolve(build.name() + ".jsonl");
      // Line 10 lies inside other(), defined on line 9: the innermost function holding it.
      try (Distribution.Running polystack = t.probe(output, "lua:counted.lua:5",
          "lua:counted.lua:10", "--per-thread")) {
        Map<String, Long> watched = watched(Files.readString(output));
        long counted = watched.get("lua:counted.lua:5");
        byte[] before = ProbedCode.live(t.pid(), counted, 4);
        t.say("go");
        assertTrue(t.out().readLine().startsWith("done"));
        assertArrayEquals(before, ProbedCode.live(t.pid(), counted, 4),
            "the watched instruction changed");
        polystack.signal("INT");
        Distribution.Result r = polystack.await(60);
        assertEquals(0, r.exitCode(), r.stderr());
        assertArrayEquals(before, ProbedCode.live(t.pid(), counted, 4), "after the run");
        String json = Files.readString(output);
        assertEquals(Map.of("lua:counted.lua:5", (long) CALLS,
            "lua:counted.lua:10", (long) CALLS / 100), ProbeTarget.calls(json), json);
        assertEquals(List.of((long) CALLS),
            ProbeTarget.perThread(json).get("lua:counted.lua:5"), json);
        assertTrue(json.contains("/counted.lua:9 (prototype"), json);
        assertTrue(json.contains("\"sigtrap_delivered\":0")
            && json.contains("\"handler_not_run\":0") && json.contains("\"no_site\":0"), json);
      }
      assertEquals(0, t.finish(), "the target was harmed");
    } finally {
      t.process().destroyForcibly();
    }
  }

  @Test
  void withTheJitOnOnlyTheInterpretersCallsAreCounted() throws Exception {
    for (LuaJitBuild build : List.of(LuaJitBuild.upstream(), LuaJitBuild.openResty())) {
      Target t = Target.start(build, dir, "-jon");
      try {
        Path output = dir.resolve(build.name() + "-jit.jsonl");
        try (Distribution.Running polystack = t.probe(output, "lua:counted.lua:5")) {
          t.say("go");
          assertTrue(t.out().readLine().startsWith("done"));
          polystack.signal("INT");
          Distribution.Result r = polystack.await(60);
          assertEquals(0, r.exitCode(), r.stderr());
        }
        String json = Files.readString(output);
        long counted = ProbeTarget.calls(json).get("lua:counted.lua:5");
        System.out.println("luajit " + build.name() + " -jon: lua:counted.lua:5 counted "
            + counted + " of " + CALLS + " calls");
        // The calls before the loop turned hot, and the trace recorder's reads of the
        // instruction; none of the calls inlined into the loop's trace.
        assertTrue(counted >= HOTLOOP && counted < HOTLOOP + 20, json);
        assertTrue(json.contains("\"sigtrap_delivered\":0"), json);
        assertEquals(0, t.finish(), "the target was harmed");
      } finally {
        t.process().destroyForcibly();
      }
    }
  }

  @Test
  void sigkillOfPolystackLeavesNoWatchpointAndTheScriptRunsOn() throws Exception {
    Target t = Target.start(LuaJitBuild.upstream(), dir, "-joff");
    try {
      Path output = dir.resolve("kill.jsonl");
      List<String> programs;
      long watched;
      byte[] before;
      try (Distribution.Running polystack = t.probe(output, "lua:counted.lua:5")) {
        watched = watched(Files.readString(output)).get("lua:counted.lua:5");
        before = ProbedCode.live(t.pid(), watched, 4);
        programs = ProbeHardwareTest.programs(polystack.pid());
        assertTrue(!programs.isEmpty(), "polystack held no BPF program: the check is blind");
        polystack.signal("KILL");
        assertTrue(polystack.process().waitFor(30, TimeUnit.SECONDS), "polystack lived on");
      }
      // Every watchpoint event holds the handler: none is left once the program is gone.
      assertEquals(null, ProbeHardwareTest.programsGone(
          new KillTrials.KillMoment(0, true, 0), programs));
      t.say("go");
      assertTrue(t.out().readLine().startsWith("done"));
      assertArrayEquals(before, ProbedCode.live(t.pid(), watched, 4));
      assertEquals(0, t.finish(), "the target was harmed");
    } finally {
      t.process().destroyForcibly();
    }
  }

  @Test
  void whatCannotBeWatchedIsRefusedWithOneLine() throws Exception {
    Target t = Target.start(LuaJitBuild.upstream(), dir, "-joff");
    try {
      String pid = Integer.toString(t.pid());
      refused("functions begin on lines 0, 5, 9", "probe", "--pid", pid, "lua:counted.lua:99");
      refused("no Lua chunk nothere.lua", "probe", "--pid", pid, "lua:nothere.lua:5");
      refused("counts entries only", "probe", "--pid", pid, "lua:counted.lua:5",
          "--monitor", "latency");
      refused("counts entries only", "probe", "--pid", pid, "lua:counted.lua:5",
          "--monitor", "args");
      refused("entries only", "probe", "--pid", pid, "lua:counted.lua:5%return");
      refused("probe it with --pid", "probe", "lua:counted.lua:5", "--", "/usr/bin/luajit",
          "-e", "");
      assertTrue(t.process().isAlive(), "the target ended");
    } finally {
      t.process().destroyForcibly();
    }
    ProbeTarget notLua = ProbeTarget.start("count", "1");
    try {
      refused("runs no LuaJIT", "probe", "--pid", Integer.toString(notLua.pid()),
          "lua:counted.lua:5");
    } finally {
      notLua.process().destroyForcibly();
    }
  }

  private static void refused(String expected, String... args) throws Exception {
    Distribution.Result r = Distribution.run(args);
    assertEquals(2, r.exitCode(), r.stderr());
    assertEquals(1, r.stderrLines().size(), r.stderr());
    assertTrue(r.stderr().contains(expected), r.stderr());
  }

  /** The watched address of each site, from the run's site lines. */
  private static Map<String, Long> watched(String json) {
    Map<String, Long> out = new java.util.HashMap<>();
    Matcher m = ADDRESS.matcher(json);
    while (m.find()) {
      out.put(m.group(1), Long.parseUnsignedLong(m.group(2), 16));
    }
    return out;
  }

  /** counted.lua under one LuaJIT, waiting for its "go" line. */
  private record Target(Process process, BufferedReader out, OutputStream in) {
    static Target start(LuaJitBuild build, Path dir, String jit) throws Exception {
      Path script = dir.resolve("counted.lua");
      try (InputStream in = ProbeLuaSiteTest.class.getResourceAsStream(
          "/lua-probe/counted.lua")) {
        Files.copy(in, script, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
      List<String> command = new ArrayList<>(List.of(build.executable().toString(), jit,
          script.toString(), Integer.toString(CALLS)));
      ProcessBuilder pb = new ProcessBuilder(command)
          .redirectError(ProcessBuilder.Redirect.INHERIT);
      pb.environment().putAll(build.env());
      Process p = pb.start();
      BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8));
      assertEquals("ready", out.readLine());
      return new Target(p, out, p.getOutputStream());
    }

    int pid() {
      return (int) process.pid();
    }

    void say(String line) throws Exception {
      in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
      in.flush();
    }

    int finish() throws Exception {
      in.close();
      assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the target did not exit");
      return process.exitValue();
    }

    /** {@code polystack probe} on it, JSON lines to {@code output}, once its watch is armed. */
    Distribution.Running probe(Path output, String... sites) throws Exception {
      List<String> all = new ArrayList<>(List.of("probe", "--pid", Integer.toString(pid()),
          "--format", "json", "-o", output.toString()));
      all.addAll(List.of(sites));
      Distribution.Running polystack = Distribution.start(all.toArray(String[]::new));
      Awaits.until("polystack's watchpoints", 60_000, () -> !polystack.process().isAlive()
          || Files.exists(output) && Files.readString(output).contains("\"type\":\"site\""));
      assertTrue(polystack.process().isAlive(), polystack.stderrSoFar());
      return polystack;
    }
  }
}
