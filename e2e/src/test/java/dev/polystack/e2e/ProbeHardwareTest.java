package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
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
 * {@code polystack probe --hw} on workloads/probe_target.c: sites placed with hardware
 * breakpoints count a C function, a function of the vDSO and code in an anonymous executable
 * mapping (as a JIT compiler's) exactly over 4 threads that existed before the run and over 4
 * made during it, record arguments and (with a breakpoint on the function's ret) return values
 * exactly, measure a sleep's latency as the program's own clock does, change no byte of the
 * target (read through /proc/PID/mem before, during and after), send it no signal, refuse what
 * does not fit with one line and exit 2, and die with polystack: after a SIGKILL the handler
 * program is gone from the kernel (a breakpoint left behind would hold it) and the target runs
 * on to exit 0.
 */
class ProbeHardwareTest {
  private static final int TRIALS = Reliability.intProperty("reliability.probeHwKillTrials", 5);
  private static final int BYTES = 16;

  @TempDir Path dir;

  @Test
  void threadsStartedBeforeTheRunAreCountedExactlyAndNoByteChanges() throws Exception {
    int n = 2_000;
    ProbeTarget target = ProbeTarget.start("hw", Integer.toString(n));
    int pid = target.pid();
    Path binary = Workloads.binary("probe_target");
    ProbedCode.Site counted = ProbedCode.sites(pid, binary, binary.toRealPath().toString(),
        List.of("probe_counted"), false).get("probe_counted");
    String jit = "0x" + Long.toHexString(target.jit());
    long[] vdso = vdsoMapping(pid);
    byte[] vdsoBefore = ProbedCode.live(pid, vdso[0], (int) (vdso[1] - vdso[0]));
    byte[] jitBefore = ProbedCode.live(pid, target.jit(), BYTES);
    Path output = dir.resolve("hw.jsonl");
    try (Distribution.Running polystack = target.probe(true, output, "probe_target:probe_counted",
        "[vdso]:clock_gettime", jit, "--per-thread")) {
      // The whole vDSO image, the anonymous code and the C function: before, while armed (and
      // after 3 * 4 * n hits), and after polystack is gone.
      List<String> checkpoints = List.of("armed", "after the calls");
      for (String when : checkpoints) {
        assertEquals(null, counted.differs(pid, "probe_counted"), when);
        assertArrayEquals(jitBefore, ProbedCode.live(pid, target.jit(), BYTES),
            "jit code, " + when);
        assertArrayEquals(vdsoBefore, ProbedCode.live(pid, vdso[0], vdsoBefore.length),
            "vDSO, " + when);
        if (when.equals("armed")) {
          target.say("go");
          target.expectLine("done");
        }
      }
      assertFalse(Files.readString(Path.of("/proc/" + pid + "/maps")).contains("[uprobes]"),
          "a uprobe was placed");
      polystack.signal("INT");
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      assertEquals(null, counted.differs(pid, "probe_counted"), "after the run");
      assertArrayEquals(jitBefore, ProbedCode.live(pid, target.jit(), BYTES),
          "jit code, after the run");
      assertArrayEquals(vdsoBefore, ProbedCode.live(pid, vdso[0], vdsoBefore.length),
          "vDSO, after the run");
      assertEquals(0, target.finish(), "the target was harmed");
      String json = Files.readString(output);
      Map<String, Long> calls = ProbeTarget.calls(json);
      assertEquals(4L * n, calls.get("probe_target:probe_counted"), json);
      assertEquals(4L * n, calls.get(jit), json);
      // libc's clock_gettime calls the vDSO's; libc itself may add calls of its own.
      long clock = calls.get("[vdso]:clock_gettime");
      assertTrue(clock >= 4L * n && clock < 5L * n, json);
      List<Long> each = List.of((long) n, (long) n, (long) n, (long) n);
      assertEquals(each, ProbeTarget.perThread(json).get("probe_target:probe_counted"), json);
      assertEquals(each, ProbeTarget.perThread(json).get(jit), json);
      assertTrue(json.contains("\"sigtrap_delivered\":0")
          && json.contains("\"handler_not_run\":0") && json.contains("\"no_site\":0")
          && json.contains("\"end\":\"stopped\""), json);
    } finally {
      target.process().destroyForcibly();
    }
  }

  /** Start and end of the [vdso] mapping of {@code pid}. */
  private static long[] vdsoMapping(int pid) throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/maps"))) {
      if (line.endsWith("[vdso]")) {
        String[] range = line.substring(0, line.indexOf(' ')).split("-");
        return new long[] {Long.parseUnsignedLong(range[0], 16),
            Long.parseUnsignedLong(range[1], 16)};
      }
    }
    throw new AssertionError("process " + pid + " maps no [vdso]");
  }

  @Test
  void threadsStartedDuringTheRunInheritTheBreakpoints() throws Exception {
    int n = 5_000;
    // The count mode's threads start at "go".
    ProbeTarget target = ProbeTarget.start("count", Integer.toString(n));
    Path output = dir.resolve("later.jsonl");
    try (Distribution.Running polystack = target.probe(true, output, "probe_target:probe_counted",
        "--per-thread")) {
      target.say("go");
      target.expectLine("done");
      assertEquals(0, target.finish());
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      String json = Files.readString(output);
      assertEquals(Map.of("probe_target:probe_counted", 4L * n), ProbeTarget.calls(json), json);
      assertEquals(List.of((long) n, (long) n, (long) n, (long) n),
          ProbeTarget.perThread(json).get("probe_target:probe_counted"), json);
    } finally {
      target.process().destroyForcibly();
    }
  }

  @Test
  void argsRecordsCarryEachCallsArgument() throws Exception {
    int n = 50;
    ProbeTarget target = ProbeTarget.start("hw", Integer.toString(n));
    String jit = "0x" + Long.toHexString(target.jit());
    Path output = dir.resolve("args.jsonl");
    try (Distribution.Running polystack = target.probe(true, output, "probe_target:probe_counted",
        jit, "--monitor", "args")) {
      target.say("go");
      target.expectLine("done");
      assertEquals(0, target.finish());
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      String json = Files.readString(output);
      for (String site : List.of("probe_target:probe_counted", jit)) {
        assertEquals(ProbeTarget.each(0, n, 4), ProbeTarget.hitValues(json, site, "rdi"),
            site + ": " + json);
      }
      assertTrue(json.contains("\"ring_full\":0") && json.contains("\"records\":" + 8 * n),
          json);
    } finally {
      target.process().destroyForcibly();
    }
  }

  @Test
  void theVdsoPluginDecodesTheVdsosClockGettime() throws Exception {
    int n = 50;
    ProbeTarget target = ProbeTarget.start("hw", Integer.toString(n));
    Path output = dir.resolve("vdso-args.jsonl");
    // clock_gettime's entry and its rets: 3 of the 4 debug registers on this kernel's vDSO.
    try (Distribution.Running polystack = target.probe(true, output,
        "[vdso]:clock_gettime%return", "--monitor", "args")) {
      target.say("go");
      target.expectLine("done");
      assertEquals(0, target.finish());
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      String json = Files.readString(output);
      // Each of 4 threads calls clock_gettime(CLOCK_MONOTONIC, &t) n times through libc.
      long decoded = Pattern.compile("\"site\":\"\\[vdso\\]:clock_gettime%return\".*"
          + "\"decoded\":\\{\"decoder\":\"vdso\",\"args\":\\{\"clockid\":"
          + "\"CLOCK_MONOTONIC\",\"tp\":\"0x\\p{XDigit}+\"\\},\"return\":\"0\","
          + "\"failed\":false\\}\\}$", Pattern.MULTILINE).matcher(json).results().count();
      assertEquals(4L * n, decoded, json);
      assertTrue(json.contains("\"decode_failed\":0") && json.contains("\"return_unmatched\":0"),
          json);
    } finally {
      target.process().destroyForcibly();
    }
  }

  @Test
  void returnBreakpointsCarryEachCallsReturnValue() throws Exception {
    int n = 50;
    ProbeTarget target = ProbeTarget.start("hw", Integer.toString(n));
    String jit = "0x" + Long.toHexString(target.jit());
    Path output = dir.resolve("return.jsonl");
    // probe_counted is `lea 0x1(%rdi),%rax; ret`: an entry and one ret, 2 debug registers.
    try (Distribution.Running polystack = target.probe(true, output,
        "probe_target:probe_counted%return", jit, "--monitor", "args")) {
      target.say("go");
      target.expectLine("done");
      assertEquals(0, target.finish());
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      String json = Files.readString(output);
      assertEquals(ProbeTarget.each(1, n, 4), ProbeTarget.hitValues(json,
          "probe_target:probe_counted%return", "rax"), json);
      assertEquals(Map.of("probe_target:probe_counted%return", 4L * n, jit, 4L * n),
          ProbeTarget.calls(json), json);
      assertTrue(json.contains("\"return_unmatched\":0") && json.contains("\"records\":"
          + 8 * n) && json.contains("\"handler_not_run\":0"), json);
    } finally {
      target.process().destroyForcibly();
    }
  }

  @Test
  void whatDoesNotFitEndsInOneLineAndExitTwo() throws Exception {
    ProbeTarget target = ProbeTarget.start("hw", "1");
    try {
      String pid = Integer.toString(target.pid());
      String jit = "0x" + Long.toHexString(target.jit());
      Map<List<String>, String> cases = Map.of(
          List.of("probe_target:probe_counted", "[vdso]:clock_gettime", jit, "libc.so.6:write",
              "libc.so.6:read", "--hw"), "at most 4 hardware-breakpoint sites",
          List.of("0x" + Long.toHexString(target.data()), "--hw"),
              "is not in an executable mapping",
          List.of("[vdso]:clock_gettime"), "add --hw",
          List.of(jit), "add --hw",
          List.of("[vdso]:no_such_function", "--hw"), "no function no_such_function in the vDSO",
          List.of(jit, "--hw", "--monitor", "latency"), "a bare address names no function",
          List.of("probe_target:probe_counted", "probe_target:probe_counted%return", "--hw"),
              "share the entry's breakpoint",
          List.of("[vdso]:clock_gettime%return", "probe_target:probe_counted%return", "--hw"),
              "need 5 breakpoints",
          List.of("probe_target:probe_tail%return", "--hw"), "a tail call");
      for (Map.Entry<List<String>, String> c : cases.entrySet()) {
        List<String> args = new ArrayList<>(List.of("probe", "--pid", pid, "--duration", "1s"));
        args.addAll(c.getKey());
        Distribution.Result r = Distribution.run(args.toArray(String[]::new));
        assertEquals(2, r.exitCode(), c.getKey() + ": " + r.stderr());
        assertEquals(1, r.stderrLines().size(), r.stderr());
        assertTrue(r.stderr().contains(c.getValue()), r.stderr());
      }
      target.say("go");
      target.expectLine("done");
      assertEquals(0, target.finish(), "the target was harmed by the refused runs");
    } finally {
      target.process().destroyForcibly();
    }
  }

  @Test
  void sigkillLeavesNoBreakpointAndTheTargetRunsOn() throws Exception {
    long seed = KillTrials.seed();
    List<KillTrials.KillMoment> moments = KillTrials.moments(seed, TRIALS, 2500, 1000);
    List<String> problems = new ArrayList<>();
    int attached = 0;
    for (KillTrials.KillMoment moment : moments) {
      String[] result = trial(moment);
      if (result[0] != null) {
        attached++;
      }
      if (result[1] != null) {
        problems.add(result[1]);
      }
    }
    Reliability.report("kill-probe-hw-KILL", String.format("trials=%d harmed=%d"
        + " attached_at_kill=%d seed=%d moments=%s%s", TRIALS, problems.size(), attached, seed,
        moments, problems.isEmpty() ? "" : " problems=" + problems));
    assertEquals(List.of(), problems, "replay: -Dreliability.seed=" + seed);
    assertTrue(attached > 0, "no trial killed polystack while its breakpoints were in");
  }

  /** {attached-at-kill marker or null, problem or null}. */
  private String[] trial(KillTrials.KillMoment moment) throws Exception {
    Path binary = Workloads.binary("probe_target");
    Process target = new ProcessBuilder(binary.toString(), "loop")
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(
        new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8));
    try {
      assertEquals("ready", out.readLine());
      int pid = (int) target.pid();
      ProbedCode.Site site = ProbedCode.sites(pid, binary, binary.toRealPath().toString(),
          List.of("probe_counted"), false).get("probe_counted");
      Path output = dir.resolve("kill-" + moment.trial() + ".jsonl");
      List<String> programs;
      boolean attached;
      try (Distribution.Running polystack = Distribution.start("probe", "--pid",
          Integer.toString(pid), "--hw", "probe_target:probe_counted", "--monitor", "latency",
          "--format", "json", "-o", output.toString())) {
        attached = KillTrials.awaitKillMoment(moment, polystack, () -> Files.exists(output)
            && Files.readString(output).contains("\"type\":\"site\""), 20);
        programs = programs(polystack.pid());
        polystack.signal("KILL");
        assertTrue(polystack.process().waitFor(30, TimeUnit.SECONDS), "polystack lived on");
      }
      String problem = KillTrials.notAttachedProblem(moment, attached);
      if (problem == null && attached && programs.isEmpty()) {
        problem = moment + ": attached, but polystack held no BPF program: the check is blind";
      }
      if (problem == null) {
        problem = programsGone(moment, programs);
      }
      if (problem == null) {
        problem = ProbedCode.untouchedAndFinishes(moment, pid, Map.of("probe_counted", site),
            target, out);
      }
      return new String[] {attached ? "attached" : null, problem};
    } finally {
      target.destroyForcibly();
      target.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** Null once no program of {@code ids} is in the kernel (a breakpoint event would hold it). */
  static String programsGone(KillTrials.KillMoment moment, List<String> ids)
      throws Exception {
    long deadline = System.nanoTime() + 10_000_000_000L;
    List<String> left = new ArrayList<>(ids);
    while (!left.isEmpty()) {
      List<String> still = new ArrayList<>();
      for (String id : left) {
        if (Tools.run(30, null, List.of("bpftool", "prog", "show", "id", id)).exitCode() == 0) {
          still.add(id);
        }
      }
      left = still;
      if (left.isEmpty() || System.nanoTime() > deadline) {
        break;
      }
      Thread.sleep(50);
    }
    return left.isEmpty() ? null : moment + ": BPF programs left in the kernel: " + left;
  }

  /** The ids of the BPF programs process {@code pid} holds (from fdinfo). */
  static List<String> programs(long pid) {
    List<String> ids = new ArrayList<>();
    Pattern prog = Pattern.compile("(?m)^prog_id:\\s*(\\d+)$");
    try (var fds = Files.list(Path.of("/proc/" + pid + "/fdinfo"))) {
      for (Path fd : fds.toList()) {
        try {
          String info = Files.readString(fd);
          Matcher p = prog.matcher(info);
          if (info.contains("prog_type:") && p.find()) {
            ids.add(p.group(1));
          }
        } catch (java.io.IOException e) {
          // closed meanwhile
        }
      }
    } catch (java.io.IOException e) {
      // polystack is gone
    }
    return ids;
  }
}
