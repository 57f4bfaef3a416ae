package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code polystack probe} on a C program it did not write (workloads/probe_target.c): the count
 * monitor is exact over 4 threads, a sleep's latency lands in the bucket the program's own clock
 * puts it in, bad sites end in one line and exit 2, a launched command is counted from its first
 * call, a program that dlcloses a probed library runs on to a normal exit, and the vdso
 * plug-in decodes libc's clock_gettime: clock names, pointers and the -1 of a failed call.
 */
class ProbeCommandTest {
  @TempDir Path dir;

  @Test
  void countIsExactOverFourThreads() throws Exception {
    int n = 20_000;
    ProbeTarget target = ProbeTarget.start("count", Integer.toString(n));
    Path output = dir.resolve("count.jsonl");
    try (Distribution.Running polystack = target.probe(false, output, "probe_target:probe_counted",
        "probe_target:probe_counted%return", "--per-thread")) {
      target.say("go");
      target.expectLine("done");
      assertEquals(0, target.finish());
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      String json = Files.readString(output);
      assertEquals(Map.of("probe_target:probe_counted", 4L * n,
          "probe_target:probe_counted%return", 4L * n), ProbeTarget.calls(json), json);
      Map<String, List<Long>> perThread = ProbeTarget.perThread(json);
      assertEquals(List.of((long) n, (long) n, (long) n, (long) n),
          perThread.get("probe_target:probe_counted"), json);
      assertTrue(json.contains("\"thread_table_full\":0") && json.contains("\"end\":"
          + "\"target_exited\""), json);
    } finally {
      target.process().destroyForcibly();
    }
  }

  @Test
  void argsRecordsCarryEachCallsArgumentAndItsReturnValue() throws Exception {
    int n = 50;
    ProbeTarget target = ProbeTarget.start("count", Integer.toString(n));
    Path output = dir.resolve("args.jsonl");
    try (Distribution.Running polystack = target.probe(false, output, "probe_target:probe_counted",
        "probe_target:probe_counted%return", "--monitor", "args")) {
      target.say("go");
      target.expectLine("done");
      assertEquals(0, target.finish());
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      String json = Files.readString(output);
      // probe_counted(i) for i in 0..n-1 on each of 4 threads; it returns i + 1.
      assertEquals(ProbeTarget.each(0, n, 4), ProbeTarget.hitValues(json,
          "probe_target:probe_counted", "rdi"), json);
      assertEquals(ProbeTarget.each(1, n, 4), ProbeTarget.hitValues(json,
          "probe_target:probe_counted%return", "rax"), json);
      assertTrue(json.contains("\"ring_full\":0") && json.contains("\"records\":" + 8 * n),
          json);
      assertEquals(Map.of("probe_target:probe_counted", 4L * n,
          "probe_target:probe_counted%return", 4L * n), ProbeTarget.calls(json), json);
    } finally {
      target.process().destroyForcibly();
    }
  }

  /** How often {@code regex} matches in {@code text}. */
  private static long count(String text, String regex) {
    return Pattern.compile(regex, Pattern.MULTILINE).matcher(text).results().count();
  }

  @Test
  void argsOfLibcClockGettimeAreDecodedByTheVdsoPluginInText() throws Exception {
    int mono = 30;
    int real = 20;
    ProbeTarget target = ProbeTarget.start("clocks", Integer.toString(mono),
        Integer.toString(real));
    Path output = dir.resolve("clocks.txt");
    try (Distribution.Running polystack = target.probe(false, "text", output,
        "libc.so.6:clock_gettime", "libc.so.6:clock_gettime%return", "--monitor", "args")) {
      target.say("go");
      assertEquals("done -1", target.out().readLine());
      assertEquals(0, target.finish());
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      String text = Files.readString(output);
      String tp = "tp=0x\\p{XDigit}+\\)";
      assertEquals(mono, count(text, "^\\[\\d+\\] libc\\.so\\.6:clock_gettime\\("
          + "clockid=CLOCK_MONOTONIC, " + tp + "$"), text);
      assertEquals(real, count(text, "^\\[\\d+\\] libc\\.so\\.6:clock_gettime\\("
          + "clockid=CLOCK_REALTIME, " + tp + "$"), text);
      assertEquals(1, count(text, "^\\[\\d+\\] libc\\.so\\.6:clock_gettime\\("
          + "clockid=CLOCK_12345, " + tp + "$"), text);
      String ret = "^\\[\\d+\\] libc\\.so\\.6:clock_gettime%return\\(clockid=";
      assertEquals(mono, count(text, ret + "CLOCK_MONOTONIC, " + tp + " = 0 <[\\d.]+ us>$"),
          text);
      assertEquals(real, count(text, ret + "CLOCK_REALTIME, " + tp + " = 0 <[\\d.]+ us>$"),
          text);
      // libc's wrapper returns -1 and leaves EINVAL in errno, which no register holds.
      assertEquals(1, count(text, ret + "CLOCK_12345, " + tp + " = -1 \\(failed\\)"
          + " <[\\d.]+ us>$"), text);
      assertEquals(2 * (mono + real + 1), count(text, "^\\[\\d+\\] "), text);
      assertTrue(text.contains("# libc.so.6:clock_gettime: decoded by plug-in vdso\n"), text);
      assertTrue(text.contains("decode_failed=0"), text);
    } finally {
      target.process().destroyForcibly();
    }
  }

  @Test
  void decodedArgsSitBesideTheRawRegistersInJson() throws Exception {
    int mono = 25;
    int real = 15;
    ProbeTarget target = ProbeTarget.start("clocks", Integer.toString(mono),
        Integer.toString(real));
    Path output = dir.resolve("clocks.jsonl");
    try (Distribution.Running polystack = target.probe(false, output, "libc.so.6:clock_gettime",
        "libc.so.6:clock_gettime%return", "--monitor", "args")) {
      target.say("go");
      assertEquals("done -1", target.out().readLine());
      assertEquals(0, target.finish());
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      String json = Files.readString(output);
      String entry = "\"site\":\"libc\\.so\\.6:clock_gettime\",\"time_ns\":\\d+,"
          + "\"args\":\\{\"rdi\":\"0x%s\",\"rsi\":\"(0x\\p{XDigit}+)\"[^}]*\\},"
          + "\"decoded\":\\{\"decoder\":\"vdso\",\"args\":\\{\"clockid\":\"%s\","
          + "\"tp\":\"\\1\"\\}\\}\\}$";
      assertEquals(mono, count(json, String.format(entry, "1", "CLOCK_MONOTONIC")), json);
      assertEquals(real, count(json, String.format(entry, "0", "CLOCK_REALTIME")), json);
      assertEquals(1, count(json, String.format(entry, "3039", "CLOCK_12345")), json);
      String ret = "\"site\":\"libc\\.so\\.6:clock_gettime%%return\",\"time_ns\":\\d+,"
          + "\"rax\":\"0x%s\",\"duration_ns\":\\d+,\"decoded\":\\{\"decoder\":\"vdso\","
          + "\"args\":\\{\"clockid\":\"%s\",\"tp\":\"0x\\p{XDigit}+\"\\},"
          + "\"return\":\"%s\",\"failed\":%s\\}\\}$";
      assertEquals(mono, count(json, String.format(ret, "0", "CLOCK_MONOTONIC", "0", "false")),
          json);
      assertEquals(real, count(json, String.format(ret, "0", "CLOCK_REALTIME", "0", "false")),
          json);
      // The int -1 in eax; the upper half of rax is whatever the wrapper left there.
      assertEquals(1, count(json, String.format(ret, "(ffffffff)?ffffffff", "CLOCK_12345",
          "-1", "true")), json);
      assertEquals(2, count(json, "\"type\":\"site\".*\"decoder\":\"vdso\"\\}$"), json);
      assertTrue(json.contains("\"decode_failed\":0") && json.contains("\"ring_full\":0"),
          json);
    } finally {
      target.process().destroyForcibly();
    }
  }

  /** With uprobes, and with --hw (a breakpoint on the entry and one on the function's ret). */
  @ParameterizedTest(name = "hw={0}")
  @ValueSource(booleans = {false, true})
  void latencyOfASleepLandsInTheBucketOfTheProgramsOwnClock(boolean hw) throws Exception {
    int n = 20;
    long us = 2500; // 2^21 ns <= 2.5 ms < 2^22 ns
    ProbeTarget target = ProbeTarget.start("sleep", Integer.toString(n), Long.toString(us));
    Path output = dir.resolve("latency.jsonl");
    try (Distribution.Running polystack = target.probe(hw, output, "probe_target:probe_sleeper",
        "--monitor", "latency")) {
      target.say("go");
      String done = target.out().readLine();
      assertTrue(done.startsWith("done "), done);
      assertEquals(0, target.finish());
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      String json = Files.readString(output);
      assertEquals(Map.of("probe_target:probe_sleeper", (long) n), ProbeTarget.calls(json),
          json);
      if (hw) { // each call: its entry and its one ret, both handled
        assertTrue(json.contains("\"entries\":" + n) && json.contains("\"returns\":" + n)
            && json.contains("\"handler_not_run\":0"), json);
      }
      Map<Integer, Long> probed = buckets(json);
      Map<Integer, Long> own = new HashMap<>();
      Matcher b = Pattern.compile("b(\\d+)=(\\d+)").matcher(done);
      while (b.find()) {
        own.put(Integer.parseInt(b.group(1)), Long.parseLong(b.group(2)));
      }
      // Each call's probed time lies between the sleep (2.5 ms, so bucket 21 at least) and
      // the program's own timing around the call: every call the program timed in bucket 21
      // is in bucket 21 for the probe too, and none is below it.
      long ownIn21 = own.getOrDefault(21, 0L);
      assertTrue(ownIn21 > 0, "the program timed no call in bucket 21: " + done);
      assertTrue(probed.getOrDefault(21, 0L) >= ownIn21, probed + " against " + done);
      assertTrue(probed.keySet().stream().allMatch(k -> k >= 21), probed.toString());
      assertEquals((long) n, probed.values().stream().mapToLong(Long::longValue).sum());
    } finally {
      target.process().destroyForcibly();
    }
  }

  private static Map<Integer, Long> buckets(String json) {
    Matcher m = Pattern.compile("\"type\":\"site_summary\".*\"buckets\":\\{([^}]*)\\}")
        .matcher(json);
    assertTrue(m.find(), json);
    Map<Integer, Long> out = new HashMap<>();
    Matcher e = Pattern.compile("\"(\\d+)\":(\\d+)").matcher(m.group(1));
    while (e.find()) {
      out.put(Integer.parseInt(e.group(1)), Long.parseLong(e.group(2)));
    }
    return out;
  }

  @Test
  void badSitesEndInOneLineAndExitTwo() throws Exception {
    ProbeTarget target = ProbeTarget.start("count", "1");
    try {
      String pid = Integer.toString(target.pid());
      Map<String, String> cases = Map.of(
          "probe_target:no_such_function", "no symbol no_such_function",
          "libnotmapped.so.1:write", "module libnotmapped.so.1 is not mapped",
          "probe_target", "is not a probe site",
          "probe_target:probe_counted+0x100000", "past the end of probe_counted",
          "probe_target:probe_counted+1", "inside an instruction",
          "libc.so.6:memcpy", "indirect function");
      for (Map.Entry<String, String> c : cases.entrySet()) {
        Distribution.Result r = Distribution.run("probe", "--pid", pid, c.getKey(),
            "--duration", "1s");
        assertEquals(2, r.exitCode(), c.getKey() + ": " + r.stderr());
        assertEquals(1, r.stderrLines().size(), r.stderr());
        assertTrue(r.stderr().contains(c.getValue()), r.stderr());
      }
      Distribution.Result none = Distribution.run("probe", "--pid", "999999999",
          "libc.so.6:write");
      assertEquals(2, none.exitCode(), none.stderr());
      assertEquals(1, none.stderrLines().size(), none.stderr());
      // A launched command with a bad site is killed where it is held: none of its code runs.
      Distribution.Result launched = Distribution.run("probe", "probe_target:no_such_function",
          "--", Workloads.binary("probe_target").toString(), "once", "1");
      assertEquals(2, launched.exitCode(), launched.stderr());
      assertEquals(1, launched.stderrLines().size(), launched.stderr());
      assertFalse(launched.stdout().contains("done"), launched.stdout());
      target.say("go");
      target.expectLine("done");
      assertEquals(0, target.finish(), "the target was harmed by the refused runs");
    } finally {
      target.process().destroyForcibly();
    }
  }

  @Test
  void aLaunchedCommandIsCountedFromItsFirstCall() throws Exception {
    int n = 5_000;
    Path output = dir.resolve("launch.jsonl");
    Distribution.Result r = Distribution.run("probe", "probe_target:probe_counted",
        "libc.so.6:malloc", "--format", "json", "-o", output.toString(), "--",
        Workloads.binary("probe_target").toString(), "once", Integer.toString(n));
    assertEquals(0, r.exitCode(), r.stderr());
    String json = Files.readString(output);
    Map<String, Long> calls = ProbeTarget.calls(json);
    assertEquals(4L * n, calls.get("probe_target:probe_counted"), json);
    // ld.so's own startup allocations come before the thread setup; the program's (stdio,
    // pthread_create) after it.
    assertTrue(calls.get("libc.so.6:malloc") > 0, json);
    assertTrue(json.contains("\"target_exit\":\"exited(0)\""), json);
  }

  @Test
  void aTargetThatDlclosesAProbedLibraryRunsOnToANormalExit() throws Exception {
    Path source = dir.resolve("probed_lib.c");
    Files.writeString(source, "__attribute__((noinline)) long lib_probed(long x) {"
        + " __asm__ volatile(\"\" : \"+r\"(x)); return x + 1; }\n");
    Path lib = dir.resolve("libprobed.so");
    Tools.Output gcc = Tools.run(60, null, List.of("gcc", "-O2", "-shared", "-fPIC", "-o",
        lib.toString(), source.toString()));
    assertEquals(0, gcc.exitCode(), gcc.stderr());
    ProbeTarget target = ProbeTarget.start("dlclose", lib.toString());
    Path output = dir.resolve("dlclose.jsonl");
    try (Distribution.Running polystack = target.probe(false, output, "libprobed.so:lib_probed",
        "probe_target:probe_counted")) {
      target.say("go");
      assertEquals("closed", target.out().readLine());
      assertFalse(Files.readString(Path.of("/proc/" + target.pid() + "/maps"))
          .contains("libprobed.so"), "the library is still mapped: the test tests nothing");
      assertTrue(polystack.process().isAlive(), polystack.stderrSoFar());
      assertEquals(0, target.finish());
      target.expectLine("done");
      Distribution.Result r = polystack.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      Map<String, Long> calls = ProbeTarget.calls(Files.readString(output));
      assertEquals(1000L, calls.get("libprobed.so:lib_probed"), calls.toString());
      assertEquals(4000L, calls.get("probe_target:probe_counted"), calls.toString());
    } finally {
      target.process().destroyForcibly();
    }
  }
}
