package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The population of issue 17 (vdso_population.c: vDSO-pointer and libc calls, EINVAL cases,
 * gettimeofday/time/getcpu every fourth round), traced and compared call for call with the
 * program's own tally, per thread, function, result and errno. Exact backends only: every
 * count is an equality.
 */
class VdsoPopulationTest {
  @TempDir Path tmp;

  /** Counts per "tid function outcome", outcome being "ok" or the errno name. */
  private static Map<String, Integer> traced(Path out) throws Exception {
    // Python's json module reads the records; results are checked against the prototype.
    String lines = Tools.python("""
        import json, sys, collections
        n = collections.Counter()
        for line in sys.stdin:
            o = json.loads(line)
            if o["type"] != "call":
                continue
            f, r, e = o["function"], o["result"], o["errno"]
            if e is None:
                ok = r > 0 if f == "time" else r == 0
                outcome = "ok" if ok else "bad_result_%d" % r
            else:
                outcome = e if r == -22 else "bad_result_%d" % r
            n["%d %s %s" % (o["tid"], f, outcome)] += 1
        for k, v in sorted(n.items()):
            print(k, v)
        """, out);
    Map<String, Integer> m = new TreeMap<>();
    for (String l : lines.lines().toList()) {
      int sp = l.lastIndexOf(' ');
      m.put(l.substring(0, sp), Integer.parseInt(l.substring(sp + 1)));
    }
    return m;
  }

  /** What the program says it did, in the same terms, for the traced functions. */
  private static Map<String, Integer> tally(String output, List<String> functions) {
    Map<String, Integer> m = new TreeMap<>();
    int threads = 0;
    for (String l : output.lines().toList()) {
      if (!l.startsWith("THREAD ")) {
        continue;
      }
      threads++;
      String[] f = l.split(" ");
      String tid = f[2];
      put(m, functions, tid + " clock_gettime ok", f[3]);
      put(m, functions, tid + " clock_gettime EINVAL", f[4]);
      put(m, functions, tid + " gettimeofday ok", f[5]);
      put(m, functions, tid + " time ok", f[6]);
      put(m, functions, tid + " getcpu ok", f[7]);
    }
    assertTrue(threads > 0, "the workload reported no threads: " + output);
    return m;
  }

  private static void put(Map<String, Integer> m, List<String> functions, String key,
      String n) {
    if (functions.contains(key.split(" ")[1]) && Integer.parseInt(n) > 0) {
      m.put(key, Integer.parseInt(n));
    }
  }

  private String lastStderr;
  /** The last session's backend and its counters, "bpf {}" when nothing was lost. */
  private String lastSummary;

  private Map<String, Integer> run(String name, List<String> flags, List<String> functions,
      String... workload) throws Exception {
    return run(name, Map.of(), flags, functions, workload);
  }

  private Map<String, Integer> run(String name, Map<String, String> env, List<String> flags,
      List<String> functions, String... workload) throws Exception {
    Path out = tmp.resolve(name + ".json");
    List<String> args = new ArrayList<>(List.of("vdso", "--json", "-o", out.toString()));
    args.addAll(flags);
    args.add("--");
    args.add(Workloads.binary("vdso_population").toString());
    args.addAll(List.of(workload));
    Distribution.Result r = Distribution.run(null, env, args.toArray(String[]::new));
    assertEquals(0, r.exitCode(), r.stderr());
    assertTrue(r.stdout().contains("DONE"), r.stdout());
    lastStderr = r.stderr();
    lastSummary = Tools.python("""
        import json, sys
        for line in sys.stdin:
            o = json.loads(line)
            if o["type"] == "session_summary":
                print(o["backend"], json.dumps(o["counters"], sort_keys=True))
        """, out).strip();
    Map<String, Integer> expected = tally(r.stdout(), functions);
    assertEquals(expected, traced(out), "traced calls against the program's own tally; stderr: "
        + r.stderr());
    return expected;
  }

  /**
   * The ptrace backend's regression (issue 17): two functions, three call sites (the program's
   * and libc's clock_gettime, the program's gettimeofday) for two return slots. A re-targeted
   * return slot used to stay disabled and lose every call that returned through it.
   */
  @Test
  void ptraceWithTwoFunctionsAndMoreCallSitesThanReturnSlotsIsExact() throws Exception {
    Map<String, Integer> m = run("ptrace", List.of("--backend", "ptrace", "--functions",
        "clock_gettime,gettimeofday"), List.of("clock_gettime", "gettimeofday"), "4", "40");
    assertEquals(4 * 3, m.size(), m.toString());
  }

  /**
   * The bpf backend on the issue's program: clock_gettime, the function the
   * default plan fits (entry + 2 ret of 4 slots), every call of every thread, nothing lost.
   */
  @Test
  void theBpfBackendRecordsTheIssuesPopulationExactly() throws Exception {
    Map<String, Integer> m = run("default", List.of("--backend", "bpf"), List.of("clock_gettime"),
        "4", "40");
    assertEquals(4 * 2, m.size(), m.toString());
    assertEquals(640, m.values().stream().mapToInt(Integer::intValue).sum());
    assertEquals("bpf {}", lastSummary, "the bpf backend, no loss counter");
    assertTrue(lastStderr.contains("not traced (no breakpoint slot left for them): gettimeofday,"
        + " time, getcpu"), "what did not fit is named, in one line: " + lastStderr);
  }

  /** 32 threads of a few ms each, in waves: each inherits the breakpoints at creation. */
  @Test
  void theBpfBackendRecordsThirtyTwoShortLivedThreads() throws Exception {
    Map<String, Integer> m = run("short", List.of("--backend", "bpf"), List.of("clock_gettime"),
        "4", "10", "8");
    assertEquals(32 * 2, m.size(), m.toString());
    assertEquals("bpf {}", lastSummary);
  }

  /** The other functions, as many per session as their entry and ret instructions fit. */
  @Test
  void bpfRecordsGettimeofdayTimeAndGetcpu() throws Exception {
    run("gtod", List.of("--backend", "bpf", "--functions", "gettimeofday"),
        List.of("gettimeofday"), "4", "40");
    assertEquals("bpf {}", lastSummary);
    Map<String, Integer> m = run("time", List.of("--backend", "bpf", "--functions",
        "time,getcpu"), List.of("time", "getcpu"), "4", "40");
    assertEquals(4 * 2, m.size(), m.toString());
    assertEquals("bpf {}", lastSummary);
  }

  /**
   * The default command on the issue's program, 4 threads and 32 short-lived ones: bpf (where
   * this boot's breakpoints raised no stray SIGTRAP, docs/vdso.md) with clock_gettime, or else
   * ptrace with four functions; every call of every thread either way.
   */
  @Test
  void theDefaultRecordsFourAndThirtyTwoThreadsExactly() throws Exception {
    for (String[] workload : List.of(new String[] {"4", "40"}, new String[] {"4", "10", "8"})) {
      Path out = tmp.resolve("default-" + workload.length + ".json");
      List<String> args = new ArrayList<>(List.of("vdso", "--json", "-o", out.toString(), "--",
          Workloads.binary("vdso_population").toString()));
      args.addAll(List.of(workload));
      Distribution.Result r = Distribution.run(args.toArray(String[]::new));
      assertEquals(0, r.exitCode(), r.stderr());
      String backend = Tools.python("""
          import json, sys
          for line in sys.stdin:
              o = json.loads(line)
              if o["type"] == "session_summary":
                  print(o["backend"], json.dumps(o["counters"], sort_keys=True))
          """, out).strip();
      List<String> functions = backend.startsWith("bpf ") ? List.of("clock_gettime")
          : List.of("clock_gettime", "gettimeofday", "time", "getcpu");
      if (!backend.startsWith("bpf ")) {
        assertTrue(r.stderr().contains("stray SIGTRAP(s) in"), "ptrace by default only where"
            + " this boot saw stray traps, and it says so: " + r.stderr());
      }
      Map<String, Integer> expected = tally(r.stdout(), functions);
      assertEquals(expected, traced(out), "every call; stderr: " + r.stderr());
      int threads = workload.length == 2 ? 4 : 32;
      assertEquals(threads * 2, expected.keySet().stream()
          .filter(k -> k.contains(" clock_gettime ")).count(), expected.toString());
      assertTrue(lossFree(backend), "nothing lost: " + backend);
    }
  }

  /** Without BPF the default is ptrace, said in one line, with four functions, exact. */
  @Test
  void withoutBpfTheDefaultIsPtraceWithFourFunctionsExactly() throws Exception {
    Map<String, Integer> m = run("fallback", Map.of("POLYSTACK_BPF_DISABLE", "1"), List.of(),
        List.of("clock_gettime", "gettimeofday", "time", "getcpu"), "4", "40");
    assertTrue(lastSummary.startsWith("ptrace "), lastSummary);
    assertEquals(4 * 5, m.size(), m.toString());
    assertEquals(1, lastStderr.lines().filter(l -> l.contains("bpf backend cannot run here"))
        .count(), lastStderr);
    assertEquals(1, lastStderr.lines().filter(l -> l.contains("not traced")).count(),
        "the defaults that do not fit share one line: " + lastStderr);
  }

  /** One return slot serves three functions; lent entry slots serve four. */
  @Test
  void ptraceTracesThreeAndFourFunctionsExactly() throws Exception {
    Map<String, Integer> three = run("three", List.of("--backend", "ptrace", "--functions",
        "clock_gettime,gettimeofday,time"), List.of("clock_gettime", "gettimeofday", "time"),
        "4", "40");
    assertEquals(4 * 4, three.size(), three.toString());
    assertTrue(lastSummary.startsWith("ptrace ") && lossFree(lastSummary), lastSummary);
    Map<String, Integer> four = run("four", List.of("--backend", "ptrace", "--functions",
        "clock_gettime,gettimeofday,time,getcpu"),
        List.of("clock_gettime", "gettimeofday", "time", "getcpu"), "4", "40");
    assertEquals(4 * 5, four.size(), four.toString());
    assertEquals("ptrace {}", lastSummary);
  }

  /** "BACKEND {counters}" with no counter but moves of the shared return slot (not a loss). */
  static boolean lossFree(String summary) {
    return summary.substring(summary.indexOf(' ') + 1)
        .replaceAll("\"return_slot_retargeted\": \\d+", "").replaceAll("[{}, ]", "").isEmpty();
  }
}
