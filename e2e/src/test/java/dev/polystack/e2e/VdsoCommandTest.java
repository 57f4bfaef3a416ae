package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;

/**
 * {@code polystack vdso} as a user runs it, on the vdso_calls workload (which prints its own
 * account of every thread's calls): the process lifecycle (exec from a worker thread, fork and
 * vfork children) and every output flag. The ptrace backend is exact, so counts are equalities.
 */
class VdsoCommandTest {
  /** The JSON keys of a call record, in order, as issue #5 lists them. */
  static final List<String> CALL_KEYS = List.of("type", "schema", "session", "seq", "pid", "tid",
      "function", "version", "args", "rax", "result", "errno", "outputs", "return_address",
      "entry_rsp", "duration_ns", "realtime_ns");

  @TempDir Path tmp;

  private static String binary() {
    return Workloads.binary("vdso_calls").toString();
  }

  /** vdso on the ptrace backend, clock_gettime only, JSON lines into {@code out}. */
  private static Distribution.Result vdso(Path out, List<String> flags, String... workload)
      throws Exception {
    return vdso("ptrace", out, flags, workload);
  }

  private static Distribution.Result vdso(String backend, Path out, List<String> flags,
      String... workload) throws Exception {
    List<String> args = new ArrayList<>(List.of("vdso", "--backend", backend, "--functions",
        "clock_gettime", "--json", "-o", out.toString()));
    args.addAll(flags);
    args.add("--");
    args.add(binary());
    args.addAll(List.of(workload));
    Distribution.Result r = Distribution.run(args.toArray(String[]::new));
    assertEquals(0, r.exitCode(), r.stderr());
    return r;
  }

  @Test
  void anExecFromAWorkerThreadIsFollowedIntoTheNewImage() throws Exception {
    Path out = tmp.resolve("exec.json");
    Distribution.Result r = vdso(out, List.of(), "exec", "10");
    assertTrue(r.stdout().contains("EXEC"), r.stdout());
    List<VdsoCalls.Line> made = VdsoCalls.parse(r.stdout());
    assertEquals(2, made.size(), "before and after the exec: " + r.stdout());
    assertEquals(made.get(0).pid(), made.get(1).pid(), "exec keeps the pid");
    assertEquals(perTid(made), perTid(calls(out)), "every call, before and after the exec");
    assertEquals(2, calls(out).stream().filter(c -> "\"EINVAL\"".equals(c.get("errno"))).count());
    assertEquals("exited(0)", summary(out).get("target_exit").replace("\"", ""));
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource({"ptrace,fork", "ptrace,vfork", "bpf,fork",
      "bpf,vfork"})
  void forkAndVforkChildrenAreTracedWithFollowForksOnly(String backend, String how)
      throws Exception {
    Path followed = tmp.resolve(how + "-followed.json");
    Distribution.Result r = vdso(backend, followed, List.of("--follow-forks"), how, "12");
    int child = VdsoCalls.child(r.stdout());
    assertTrue(child > 0, r.stdout());
    List<VdsoCalls.Line> made = VdsoCalls.parse(r.stdout());
    assertEquals(perTid(made), perTid(calls(followed)), "parent and child, each complete");
    assertTrue(calls(followed).stream().anyMatch(c -> c.get("pid").equals("" + child)),
        "the child's calls carry its pid");
    String summary = Files.readString(followed);
    assertTrue(summary.contains("{\"type\":\"thread_summary\",\"schema\":1,\"session\":"),
        summary);

    Path alone = tmp.resolve(how + "-alone.json");
    Distribution.Result r2 = vdso(backend, alone, List.of(), how, "12");
    int child2 = VdsoCalls.child(r2.stdout());
    List<VdsoCalls.Line> made2 = VdsoCalls.parse(r2.stdout());
    Map<String, Long> parentOnly = perTid(made2.stream().filter(m -> m.pid() != child2)
        .toList());
    assertEquals(parentOnly, perTid(calls(alone)), "without the flag only the parent");
  }

  @Test
  void thePerfBackendRefusesFollowForksInOneLine() throws Exception {
    Distribution.Result r = Distribution.run("vdso", "--backend", "perf", "--follow-forks",
        "--", binary(), "fork", "2");
    assertEquals(2, r.exitCode(), r.stderr());
    assertEquals(1, r.stderrLines().size(), r.stderr());
    assertTrue(r.stderr().contains("--backend bpf or ptrace"), r.stderr());
  }

  @Test
  void anUnknownFunctionIsBadUsageInOneLine() throws Exception {
    // Known only once the target's vDSO is read, but still the command line's mistake: exit 2.
    Distribution.Result r = Distribution.run("vdso", "--backend", "perf", "--functions",
        "frobnicate", "-d", "10s", "--", binary(), "fork", "2");
    assertEquals(2, r.exitCode(), r.stderr());
    assertEquals(1, r.stderrLines().size(), r.stderr());
    assertTrue(r.stderr().contains("unknown vDSO function 'frobnicate'; the vDSO exports: "),
        r.stderr());
  }

  @Test
  void appendKeepsTwoSessionsApartBySessionId() throws Exception {
    Path out = tmp.resolve("both.json");
    vdso(out, List.of("--append"), "threads", "2", "8");
    vdso(out, List.of("--append"), "threads", "1", "8");
    Map<String, List<Map<String, String>>> bySession = calls(out).stream()
        .collect(Collectors.groupingBy(c -> c.get("session")));
    assertEquals(2, bySession.size(), bySession.keySet().toString());
    Set<Integer> sizes = bySession.values().stream().map(List::size)
        .collect(Collectors.toSet());
    assertEquals(Set.of(20, 10), sizes, "2 x (8 + 2) and 1 x (8 + 2) calls");
    for (List<Map<String, String>> session : bySession.values()) {
      List<Long> seqs = session.stream().map(c -> Long.parseLong(c.get("seq"))).toList();
      assertEquals(1L, seqs.get(0), "each session counts from 1");
    }
    List<Map<String, String>> summaries = lines(out).stream()
        .filter(l -> l.get("type").equals("\"session_summary\"")).toList();
    assertEquals(2, summaries.size());
    assertEquals(bySession.keySet(), summaries.stream().map(s -> s.get("session"))
        .collect(Collectors.toSet()));
  }

  @Test
  void errorsOnlyEmitsTheFailedCallsAndStatisticsStillCountAll() throws Exception {
    Path out = tmp.resolve("errors.json");
    vdso(out, List.of("--errors-only"), "threads", "2", "20");
    List<Map<String, String>> calls = calls(out);
    assertEquals(10, calls.size());
    assertTrue(calls.stream().allMatch(c -> c.get("errno").equals("\"EINVAL\"")
        && c.get("result").equals("-22")));
    Map<String, String> s = summary(out);
    assertEquals("50", s.get("calls"));
    assertEquals("10", s.get("emitted"));
  }

  @Test
  void minDurationEmitsExactlyTheCallsOfTheBucketsAboveIt() throws Exception {
    // 2^15 ns is a bucket boundary: the emitted calls must be those of buckets 15 and up.
    Path out = tmp.resolve("slow.json");
    vdso(out, List.of("--min-duration", "32768ns"), "threads", "2", "20");
    List<Map<String, String>> calls = calls(out);
    assertTrue(calls.stream().allMatch(c -> Long.parseLong(c.get("duration_ns")) >= 32768));
    Map<String, String> s = summary(out);
    assertEquals("50", s.get("calls"));
    long above = 0;
    Matcher m = Pattern.compile("\"(\\d+)\":(\\d+)").matcher(s.get("buckets"));
    while (m.find()) {
      above += Integer.parseInt(m.group(1)) >= 15 ? Long.parseLong(m.group(2)) : 0;
    }
    assertEquals(above, calls.size(), s.get("buckets"));
    assertEquals(Long.toString(above), s.get("emitted"));

    Path none = tmp.resolve("none.json");
    vdso(none, List.of("--min-duration", "10s"), "threads", "2", "20");
    assertEquals(0, calls(none).size());
    assertEquals("50", summary(none).get("calls"));
  }

  @Test
  void summaryOnlyPrintsOnlyTheStatistics() throws Exception {
    Path json = tmp.resolve("summary.json");
    vdso(json, List.of("--summary-only"), "threads", "2", "20");
    assertEquals(List.of("\"thread_summary\"", "\"thread_summary\"", "\"session_summary\""),
        lines(json).stream().map(l -> l.get("type")).toList());
    assertEquals("50", summary(json).get("calls"));

    Path text = tmp.resolve("summary.txt");
    Distribution.Result r = Distribution.run("vdso", "--backend", "ptrace", "--functions",
        "clock_gettime", "--summary-only", "-o", text.toString(), "--", binary(), "threads", "2",
        "20");
    assertEquals(0, r.exitCode(), r.stderr());
    String t = Files.readString(text);
    assertTrue(t.contains("calls    errors function"), t);
    assertTrue(t.lines().anyMatch(l -> l.matches(".*\\s50\\s+10 clock_gettime")), t);
    assertFalse(t.contains("] clock_gettime("), "no call lines: " + t);
    assertFalse(t.startsWith("# session"), t);
  }

  @Test
  void callRecordsHaveExactlyTheKeysOfIssue5InOrder() throws Exception {
    Path out = tmp.resolve("keys.json");
    vdso(out, List.of(), "threads", "1", "4");
    // Python's json module is the oracle for both the syntax and the key order.
    String keys = Tools.python("""
        import json, sys
        for line in sys.stdin:
            o = json.loads(line)
            if o["type"] == "call":
                print(",".join(o.keys()))
        """, out);
    List<String> lines = keys.lines().toList();
    assertEquals(5, lines.size(), keys);
    for (String l : lines) {
      assertEquals(String.join(",", CALL_KEYS), l);
    }
  }

  @Test
  void tidFilterAndMaxCallsOnAnAttachedTargetThatKeepsRunningUnharmed() throws Exception {
    try (Target target = Target.start(Workloads.binary("vdso_calls"), "loop", "2")) {
      target.awaitOutput("READY", 30_000);
      List<Integer> tids = tasks(target.pid());
      int chosen = tids.get(tids.size() - 1); // a looping thread (created last)
      Path out = tmp.resolve("tid.json");
      Distribution.Result r = Distribution.run("vdso", "--pid", "" + target.pid(), "--backend",
          "ptrace", "--functions", "clock_gettime", "--json", "-o", out.toString(), "--tid",
          "" + chosen, "--max-calls", "60", "--duration", "60s");
      assertEquals(0, r.exitCode(), r.stderr());
      Map<String, String> s = summary(out);
      assertEquals("\"max_calls\"", s.get("end"));
      assertEquals("60", s.get("calls"), "the session ends after N calls");
      List<Map<String, String>> calls = calls(out);
      assertTrue(calls.stream().allMatch(c -> c.get("tid").equals("" + chosen)), "--tid");
      assertEquals(s.get("emitted"), Integer.toString(calls.size()));
      assertTrue(calls.size() < 60, "the other thread's calls are counted, not emitted");

      // Unharmed: not stopped, not traced, and still calling.
      Target.Status st = target.status();
      assertNotNull(st, "target died");
      assertFalse(st.stopped(), st.toString());
      assertEquals(0, st.tracerPid());
      int ticks = count(target.output(), "TICK ");
      long until = System.nanoTime() + 30_000_000_000L;
      while (count(target.output(), "TICK ") < ticks + 2 && System.nanoTime() < until) {
        Thread.sleep(50);
      }
      assertTrue(count(target.output(), "TICK ") >= ticks + 2, "still calling: "
          + target.output());
      target.stdin().close();
      assertEquals(0, target.awaitExit(30), "the target ends when told, with its own code");
      assertEquals(2, VdsoCalls.parse(target.output()).size());
    }
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource({"record,--mode,ptrace", "record,--mode,perf",
      "vdso,--backend,ptrace", "vdso,--backend,perf"})
  void aLaunchedTargetStillRunningAtTheEndIsKilledAndTheSummarySaysSo(String command,
      String flag, String backend) throws Exception {
    // A unique argument finds the process afterwards (sleep takes fractional seconds).
    String seconds = "600." + System.nanoTime() % 1_000_000;
    List<String> args = new ArrayList<>(List.of(command, flag, backend, "--duration", "1s",
        "-o", tmp.resolve("out").toString()));
    if (command.equals("record")) {
      args.addAll(List.of("--format", "folded"));
    }
    args.addAll(List.of("--", "sleep", seconds));
    Distribution.Result r = Distribution.run(args.toArray(String[]::new));
    assertEquals(0, r.exitCode(), r.stderr());
    assertTrue(r.stderr().contains("polystack: done; the launched target was still running and"
        + " polystack ended it (SIGTERM, then SIGKILL 2 s later if still running)"),
        r.stderr());
    assertFalse(r.stderr().contains("still running\n") || r.stderr().contains("detached and"),
        r.stderr());
    try (var procs = Files.list(Path.of("/proc"))) {
      List<String> left = procs.filter(p -> p.getFileName().toString().matches("\\d+"))
          .map(p -> {
            try {
              return Files.readString(p.resolve("cmdline")).replace('\0', ' ');
            } catch (IOException e) {
              return "";
            }
          }).filter(c -> c.contains(seconds)).toList();
      assertEquals(List.of(), left, "the launched target is gone");
    }
  }

  private static int count(String text, String prefix) {
    return (int) text.lines().filter(l -> l.startsWith(prefix)).count();
  }

  private static List<Integer> tasks(int pid) throws IOException {
    try (var s = Files.list(Path.of("/proc/" + pid + "/task"))) {
      return s.map(p -> Integer.parseInt(p.getFileName().toString())).sorted().toList();
    }
  }

  private static Map<String, Long> perTid(List<?> items) {
    Map<String, Long> m = new HashMap<>();
    for (Object o : items) {
      if (o instanceof VdsoCalls.Line l) {
        m.merge(l.pid() + "/" + l.tid(), (long) l.ok() + l.failed(), Long::sum);
      } else {
        @SuppressWarnings("unchecked")
        Map<String, String> c = (Map<String, String>) o;
        m.merge(c.get("pid") + "/" + c.get("tid"), 1L, Long::sum);
      }
    }
    return m;
  }

  private static final Pattern FIELD = Pattern.compile(
      "\"([a-z0-9_]+)\":(\"[^\"]*\"|\\{[^{}]*(?:\\{[^{}]*\\}[^{}]*)*\\}|[^,{}]+)");

  /**
   * The top-level fields of each JSON line, values as written (strings keep their quotes).
   * Our writer emits compact JSON with at most two levels of nesting, so a regex suffices;
   * the key-order test has Python parse the same output.
   */
  static List<Map<String, String>> lines(Path file) throws IOException {
    List<Map<String, String>> out = new ArrayList<>();
    for (String line : Files.readAllLines(file)) {
      if (line.isBlank()) {
        continue;
      }
      Map<String, String> fields = new java.util.LinkedHashMap<>();
      Matcher m = FIELD.matcher(line.substring(1, line.length() - 1));
      int at = 0;
      String body = line.substring(1, line.length() - 1);
      while (at < body.length() && m.find(at) && m.start() == at) {
        fields.putIfAbsent(m.group(1), m.group(2));
        at = m.end() + 1; // past the comma
      }
      assertEquals(body.length() + 1, at, "unparsed JSON line: " + line);
      out.add(fields);
    }
    return out;
  }

  static List<Map<String, String>> calls(Path file) throws IOException {
    return lines(file).stream().filter(l -> l.get("type").equals("\"call\"")).toList();
  }

  static Map<String, String> summary(Path file) throws IOException {
    List<Map<String, String>> s = lines(file).stream()
        .filter(l -> l.get("type").equals("\"session_summary\"")).toList();
    assertEquals(1, s.size(), "one session summary in " + file);
    return s.get(0);
  }

  /** Session ids in the order they appear. */
  static Set<String> sessions(Path file) throws IOException {
    return lines(file).stream().map(l -> l.get("session"))
        .collect(Collectors.toCollection(LinkedHashSet::new));
  }
}
