package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.session.RecordSession;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.TargetInfo;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class SummariesTest {

  @Test
  void statsJsonCarriesPausesAndCountersSortedByReason() {
    Map<String, Long> losses = new LinkedHashMap<>();
    losses.put("late_tick", 3L);
    losses.put("dropped \"x\"", 1L);
    losses.put("capture_ticks", 610L); // bpf mode's kernel figures travel apart from losses
    var summary = new RecordSession.Summary(600, 603, 1, Map.of("no_module", 2L), losses, 600,
        41_000, 38_000, 95_000, 120_000, 98.96);
    assertEquals("{\"samples\": 600, \"periods\": 603, \"threads\": 1, \"achieved_hz\": 98.960, \"on_cpu_hz\": null,"
        + " \"pause_ns\":"
        + " {\"count\": 600, \"mean\": 41000, \"median\": 38000, \"p99\": 95000, \"max\": 120000},"
        + " \"errors\": {\"no_module\": 2}, \"losses\": {\"dropped \\\"x\\\"\": 1,"
        + " \"late_tick\": 3}, \"capture\": {\"ticks\": 610}, \"notes\": {},"
        + " \"host\": {\"cpu_ns\": CPU,"
        + " \"peak_rss_kib\": RSS}}\n",
        withoutHostFigures(Summaries.statsJson(summary)));
  }

  /** The host figures change from run to run; they must be there, positive, and whole. */
  private static String withoutHostFigures(String json) {
    Matcher m = Pattern.compile("\"cpu_ns\": (\\d+), \"peak_rss_kib\": (\\d+)").matcher(json);
    assertTrue(m.find(), json);
    assertTrue(Long.parseLong(m.group(1)) > 0 && Long.parseLong(m.group(2)) > 0, json);
    return m.replaceFirst("\"cpu_ns\": CPU, \"peak_rss_kib\": RSS");
  }

  @Test
  void statsJsonWithNoSamples() {
    var summary = new RecordSession.Summary(0, 0, 0, Map.of(), Map.of(), 0, 0, 0, 0, 0, 0);
    assertEquals("{\"samples\": 0, \"periods\": 0, \"threads\": 0, \"achieved_hz\": 0.000, \"on_cpu_hz\": null,"
        + " \"pause_ns\":"
        + " {\"count\": 0, \"mean\": 0, \"median\": 0, \"p99\": 0, \"max\": 0}, \"errors\": {},"
        + " \"losses\": {}, \"capture\": {}, \"notes\": {}, \"host\": {\"cpu_ns\": CPU,"
        + " \"peak_rss_kib\": RSS}}\n",
        withoutHostFigures(Summaries.statsJson(summary)));
  }

  @Test
  void anEmptyAllocationProfileSaysWhatWasSampledNotWhereThreadsSlept() {
    Recording r = new Recording(new TargetInfo(7, "/bin/allocator", List.of("allocator")), 0,
        3_000_000_000L, 524_288L, "bpf-alloc", List.of(), List.of(), Map.of(),
        dev.polystack.otel.model.ValueType.ALLOCATIONS, 1);
    var summary = new RecordSession.Summary(0, 0, 0, Map.of(), Map.of(), 0, 0, 0, 0, 0, 0);
    String why = Summaries.whyEmpty(new RecordSession.Result(r, summary, null, false, false),
        Map.of(), false);
    assertEquals("the profile is empty: no allocation was sampled in 3000 ms (the target called"
        + " no probed allocator of the C library, or allocated less than the sampling interval;"
        + " --alloc-every-call samples every call)", why);
  }

  @Test
  void theRateIsNamedRequestedOnCpuAndWall() {
    // 4 samples in 0.041 s of the target's CPU time over 1.1 s of wall time: a sleeping target.
    Map<String, Long> counters = Map.of("target_cpu_ns", 41_000_000L, "target_cpu_samples", 4L);
    Recording r = new Recording(new TargetInfo(7, "/bin/sleeper", List.of("sleeper")), 0,
        1_100_000_000L, 10_101_010L, "perf", List.of(), List.of(), counters);
    var summary = new RecordSession.Summary(4, 4, 1, Map.of(), counters, 0, 0, 0, 0, 0, 3.64);
    String printed = print(new RecordSession.Result(r, summary, null, false, false), false, false);
    assertTrue(printed.contains("polystack: 4 samples from 1 thread; 99 Hz requested, 97.6 Hz"
        + " on-CPU, 3.6 Hz wall per thread\n"), printed);
    assertTrue(withoutHostFigures(Summaries.statsJson(summary)).contains(
        "\"achieved_hz\": 3.640, \"on_cpu_hz\": 97.561,"), Summaries.statsJson(summary));
  }

  @Test
  void bpfModeShowsTheKernelsFiguresApartFromLossesWhenVerbose() {
    Map<String, Long> counters = new LinkedHashMap<>();
    counters.put("bpf_ring_full", 2L);
    counters.put("capture_ticks", 500L);
    counters.put("capture_records", 498L);
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/luajit", List.of("luajit")), 0, 1,
        10_000_000L, "bpf", List.of(), List.of(), counters);
    var summary = new RecordSession.Summary(498, 498, 1, Map.of(), counters, 0, 0, 0, 0, 0, 99);
    var result = new RecordSession.Result(r, summary, null, false, false);
    String printed = print(result, true, false);
    assertTrue(printed.contains("polystack: target never stopped (bpf mode)\n"), printed);
    assertTrue(printed.contains("polystack: lost 2 samples: 2 while polystack was busy\n"),
        printed);
    assertTrue(printed.contains("polystack: not sampled or lost, by reason: bpf_ring_full 2\n"),
        printed);
    assertTrue(printed.contains("polystack: tick capture: records 498, ticks 500\n"), printed);

    String plain = print(result, false, false);
    assertTrue(plain.contains("polystack: lost 2 samples: 2 while polystack was busy (-v or"
        + " --stats-json for the exact reasons)\n"), plain);
    assertFalse(plain.contains("bpf_ring_full"), plain);
    assertFalse(plain.contains("tick capture"), plain);
  }

  @Test
  void lossesAreGroupedInPlainWordsAndPlugInCountersAreNotLosses() {
    Map<String, Long> losses = new LinkedHashMap<>();
    losses.put("late_tick", 7L);
    losses.put("queue_full", 3L);
    losses.put("thread_gone", 2L);
    losses.put("learning_walk", 1L);
    losses.put("plugin.luajit.g_from_cache", 40L);
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/luajit", List.of("luajit")), 0, 1,
        10_000_000L, "ptrace", List.of(), List.of(), losses);
    var summary = new RecordSession.Summary(1, 1, 1, Map.of(), losses, 1, 1, 1, 1, 1, 99);
    String printed = print(new RecordSession.Result(r, summary, null, true, false), false, false);
    assertTrue(printed.contains("polystack: 1 sample from 1 thread; 100 Hz requested, on-CPU rate"
        + " not measured, 99.0 Hz wall per thread\n"), printed);
    assertTrue(printed.contains("polystack: lost 13 samples: 10 while polystack was busy,"
        + " 2 threads gone, 1 while learning a thread's stack (-v"), printed);
    assertFalse(printed.contains("g_from_cache"), printed);
    assertFalse(printed.contains("learning_walk"), printed);
    String verbose = print(new RecordSession.Result(r, summary, null, true, false), true, false);
    assertTrue(verbose.contains("polystack: notes (not losses): plugin.luajit.g_from_cache 40\n"),
        verbose);
  }

  /**
   * The bug the declarations fixed: a bpf-mode run's capture_plan_refused and
   * capture_counters_unreadable are losses (they were hidden with the capture figures), and
   * its capture figures are not.
   */
  @Test
  void captureLossesAreLossesAndCaptureFiguresAreNot() {
    Map<String, Long> counters = new LinkedHashMap<>();
    counters.put("capture_records", 298L);
    counters.put("capture_ticks", 298L);
    counters.put("capture_plans", 2L);
    counters.put("capture_plan_refused", 1L);
    counters.put("capture_counters_unreadable", 1L);
    counters.put("module_not_elf", 3L);
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/luajit", List.of("luajit")), 0, 1,
        10_000_000L, "bpf", List.of(), List.of(), counters);
    var summary = new RecordSession.Summary(298, 298, 1, Map.of(), counters, 0, 0, 0, 0, 0, 99);
    var result = new RecordSession.Result(r, summary, null, false, false);
    String plain = print(result, false, false);
    assertTrue(plain.contains("polystack: lost 2 samples: 1 stack unreadable, 1 polystack could"
        + " not sample (-v"), plain);
    String verbose = print(result, true, false);
    assertTrue(verbose.contains("polystack: not sampled or lost, by reason:"
        + " capture_counters_unreadable 1, capture_plan_refused 1\n"), verbose);
    assertTrue(verbose.contains("polystack: notes (not losses): module_not_elf 3\n"), verbose);
    assertTrue(verbose.contains("polystack: tick capture: plans 2, records 298, ticks 298\n"),
        verbose);
    String json = Summaries.statsJson(summary);
    assertTrue(json.contains("\"losses\": {\"capture_counters_unreadable\": 1,"
        + " \"capture_plan_refused\": 1}, \"capture\": {\"plans\": 2, \"records\": 298,"
        + " \"ticks\": 298}, \"notes\": {\"module_not_elf\": 3}"), json);
  }

  @Test
  void anUndeclaredCounterIsCountedForOtherReasons() {
    Map<String, Long> counters = Map.of("late_tick", 2L, "not_declared_anywhere", 5L);
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/luajit", List.of("luajit")), 0, 1,
        10_000_000L, "perf", List.of(), List.of(), counters);
    var summary = new RecordSession.Summary(9, 9, 1, Map.of(), counters, 0, 0, 0, 0, 0, 99);
    String printed = print(new RecordSession.Result(r, summary, null, false, false));
    assertTrue(printed.contains("polystack: lost 7 samples: 2 while polystack was busy,"
        + " 5 for other reasons (-v"), printed);
    assertTrue(Summaries.statsJson(summary).contains("\"not_declared_anywhere\": 5"));
  }

  @Test
  void theSummarySaysWhenTicksNotTakenWeighOnTheNextSamples() {
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/luajit", List.of("luajit")), 0, 1,
        10_000_000L, "ptrace", List.of(), List.of(), Map.of("late_tick", 25L));
    var summary = new RecordSession.Summary(266, 294, 1, Map.of(), Map.of("late_tick", 25L), 266,
        150_000, 140_000, 300_000, 900_000, 146.4);
    String printed = print(new RecordSession.Result(r, summary, null, true, false));
    assertTrue(printed.contains("polystack: 28 ticks were not sampled; their time counts in the"
        + " same thread's next sample\n"), printed);

    var one = new RecordSession.Summary(266, 267, 1, Map.of(), Map.of(), 266, 150_000,
        140_000, 300_000, 900_000, 99.0);
    printed = print(new RecordSession.Result(r, one, null, true, false));
    assertTrue(printed.contains("polystack: 1 tick was not sampled; its time counts in the"
        + " same thread's next sample\n"), printed);

    var onTime = new RecordSession.Summary(266, 266, 1, Map.of(), Map.of(), 266, 150_000,
        140_000, 300_000, 900_000, 99.0);
    printed = print(new RecordSession.Result(r, onTime, null, true, false));
    assertTrue(!printed.contains("not sampled"), printed);
  }

  @Test
  void anEmptyProfileSaysWhyInOneWarning() {
    Recording r = new Recording(new TargetInfo(7, "/bin/sleep", List.of("sleep", "9")), 0,
        2_000_000_000L, 10_000_000L, "bpf", List.of(), List.of(), Map.of());
    var none = new RecordSession.Summary(0, 0, 0, Map.of(), Map.of(), 0, 0, 0, 0, 0, 0);
    // Still running: its threads slept the whole time.
    String running = print(new RecordSession.Result(r, none, null, true, false));
    assertTrue(running.endsWith("polystack: warning: the profile is empty: the target's threads"
        + " were off-CPU (sleeping or waiting) the whole time and only running threads are"
        + " sampled; to see where they wait, use --mode ptrace --idle\n"), running);
    // Ended: at once or after sleeping, no thread was seen running.
    String gone = print(new RecordSession.Result(r, none, null, false, true));
    assertTrue(gone.endsWith("polystack: warning: the profile is empty: the target ended after"
        + " 2000 ms without a thread seen running: it exited at once, or its threads were"
        + " off-CPU (sleeping, waiting) until the end; --mode ptrace --idle samples sleeping"
        + " threads too\n"), gone);
    // Every sample lost.
    var lost = new RecordSession.Summary(0, 0, 0, Map.of(), Map.of("thread_gone", 3L), 0, 0, 0,
        0, 0, 0);
    String allLost = print(new RecordSession.Result(r, lost, null, false, true));
    assertTrue(allLost.contains("polystack: lost 3 samples: 3 threads gone (-v"), allLost);
    assertTrue(allLost.endsWith("polystack: warning: the profile is empty: every sample was lost"
        + " (see the line above; -v for the exact reasons)\n"), allLost);
    assertEquals(1, allLost.lines().filter(l -> l.contains("warning")).count(), allLost);
  }

  @Test
  void aRepeatedWarningIsPrintedOnceAndCountedAtTheEnd() {
    StringWriter err = new StringWriter();
    Console console = new Console(new PrintWriter(new StringWriter()), new PrintWriter(err));
    console.warn("thread 12: no stack");
    console.warn("thread 12: no stack");
    console.warn("other");
    console.warn("thread 12: no stack");
    console.reportRepeats();
    assertEquals("polystack: warning: thread 12: no stack\n"
        + "polystack: warning: other\n"
        + "polystack: warning: 2 more times: thread 12: no stack\n", err.toString());
  }

  private static String print(RecordSession.Result result) {
    return print(result, false, false);
  }

  private static String print(RecordSession.Result result, boolean verbose, boolean idle) {
    StringWriter err = new StringWriter();
    Summaries.print(new Console(new PrintWriter(new StringWriter()), new PrintWriter(err)),
        result, null, verbose, idle);
    return err.toString();
  }
}
