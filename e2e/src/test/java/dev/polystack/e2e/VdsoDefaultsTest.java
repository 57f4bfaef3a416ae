package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What {@code polystack vdso} prints when given nothing but a program (the statistics, as
 * {@code strace -c}; calls with {@code --calls} or {@code -o}), the tracer's own cost beside the
 * durations, and the ptrace backend's shared and lent return slots under signal handlers that
 * call the vDSO while the thread is inside a vDSO call.
 */
class VdsoDefaultsTest {
  @TempDir Path tmp;

  private static String population() {
    return Workloads.binary("vdso_population").toString();
  }

  @Test
  void theDefaultPrintsTheTableAndHistogramAndOneLineForWhatDidNotFit() throws Exception {
    Distribution.Result r = Distribution.run("vdso", "--", population(), "2", "10");
    assertEquals(0, r.exitCode(), r.stderr());
    String out = r.stdout();
    assertTrue(out.contains("calls    errors function"), out);
    assertTrue(out.contains("latency (ns)"), out);
    assertFalse(out.contains("] clock_gettime("), "no call lines without --calls: " + out);
    assertTrue(out.lines().anyMatch(l -> l.startsWith("tracer cost: each duration above"
        + " includes about ")), "the tracer's own cost beside the durations: " + out);
    assertEquals(1, r.stderr().lines().filter(l -> l.contains("not traced")).count(),
        r.stderr());
    assertFalse(r.stderr().contains("SIGKILL") && out.contains("backend: bpf"),
        "no ptrace warning for a bpf session: " + r.stderr());
  }

  @Test
  void callsPrintsEveryCallAndContradictingSummaryOnlyIsBadUsage() throws Exception {
    Distribution.Result r = Distribution.run("vdso", "--calls", "--functions", "clock_gettime",
        "--", population(), "2", "10");
    assertEquals(0, r.exitCode(), r.stderr());
    long lines = r.stdout().lines().filter(l -> l.contains("] clock_gettime(")).count();
    assertEquals(2 * 20 * 2, lines, "every call of 2 threads x 10 rounds x 4: " + r.stdout());

    Distribution.Result bad = Distribution.run("vdso", "--calls", "--summary-only", "--",
        population(), "1", "1");
    assertEquals(2, bad.exitCode(), bad.stderr());
    assertEquals(1, bad.stderrLines().size(), bad.stderr());
  }

  @Test
  void theJsonSummaryCarriesTheTracerCostBelowEveryDuration() throws Exception {
    Path out = tmp.resolve("cost.json");
    Distribution.Result r = Distribution.run("vdso", "--functions", "clock_gettime", "--json",
        "-o", out.toString(), "--", population(), "2", "10");
    assertEquals(0, r.exitCode(), r.stderr());
    String check = Tools.python("""
        import json, sys
        calls = []
        for line in sys.stdin:
            o = json.loads(line)
            if o["type"] == "call":
                calls.append(o["duration_ns"])
            elif o["type"] == "session_summary":
                s = o
        print(len(calls), s["tracer_cost_ns"] == min(calls), s["tracer_cost_ns"] > 0)
        """, out).strip();
    assertEquals("80 True True", check, "-o FILE gets every call and the cost");
  }

  /**
   * vdso_handler.c: SIGUSR1 handlers call gettimeofday and time while the main thread is inside
   * clock_gettime or getcpu (the thread is stopped at the entry when the signal comes). With
   * 2 functions the spare return slots serve the nesting, with 3 the one spare and a lent entry
   * slot, with 4 only lent entry slots; every call must be recorded in each.
   */
  @ParameterizedTest
  @ValueSource(strings = {"clock_gettime,gettimeofday", "clock_gettime,gettimeofday,time",
      "clock_gettime,gettimeofday,time,getcpu"})
  void ptraceRecordsVdsoCallsOfSignalHandlersNestedInVdsoCalls(String functions)
      throws Exception {
    Path out = tmp.resolve("handler.json");
    Distribution.Result r = Distribution.run("vdso", "--backend", "ptrace", "--functions",
        functions, "--json", "-o", out.toString(), "--",
        Workloads.binary("vdso_handler").toString(), "600");
    assertEquals(0, r.exitCode(), r.stderr());
    String line = r.stdout().lines().filter(l -> l.startsWith("HANDLER ")).findFirst()
        .orElseThrow(() -> new AssertionError(r.stdout()));
    String[] f = line.split(" ");
    Map<String, Integer> made = new TreeMap<>();
    List<String> names = List.of("clock_gettime", "getcpu", "gettimeofday", "time");
    for (int i = 0; i < names.size(); i++) {
      if (List.of(functions.split(",")).contains(names.get(i))) {
        made.put(names.get(i), Integer.parseInt(f[3 + i]));
      }
    }
    assertTrue(Integer.parseInt(f[8]) > 0, "no signal came inside a call: " + line);
    String counts = Tools.python("""
        import json, sys, collections
        n = collections.Counter()
        for line in sys.stdin:
            o = json.loads(line)
            if o["type"] == "call" and o["errno"] is None:
                n[o["function"]] += 1
            if o["type"] == "session_summary":
                lost = {k: v for k, v in o["counters"].items() if k != "return_slot_retargeted"}
        print(" ".join("%s=%d" % kv for kv in sorted(n.items())), json.dumps(lost))
        """, out).strip();
    List<String> expected = new ArrayList<>();
    made.forEach((k, v) -> expected.add(k + "=" + v));
    assertEquals(String.join(" ", expected) + " {}", counts, line);
  }
}
