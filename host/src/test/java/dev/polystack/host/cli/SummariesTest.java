package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.sampling.RecordSession;
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
    assertEquals("{\"samples\": 600, \"periods\": 603, \"threads\": 1, \"achieved_hz\": 98.960, \"pause_ns\":"
        + " {\"count\": 600, \"mean\": 41000, \"median\": 38000, \"p99\": 95000, \"max\": 120000},"
        + " \"errors\": {\"no_module\": 2}, \"losses\": {\"dropped \\\"x\\\"\": 1,"
        + " \"late_tick\": 3}, \"capture\": {\"ticks\": 610}, \"host\": {\"cpu_ns\": CPU,"
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
    assertEquals("{\"samples\": 0, \"periods\": 0, \"threads\": 0, \"achieved_hz\": 0.000, \"pause_ns\":"
        + " {\"count\": 0, \"mean\": 0, \"median\": 0, \"p99\": 0, \"max\": 0}, \"errors\": {},"
        + " \"losses\": {}, \"capture\": {}, \"host\": {\"cpu_ns\": CPU, \"peak_rss_kib\": RSS}}\n",
        withoutHostFigures(Summaries.statsJson(summary)));
  }

  @Test
  void bpfModeShowsTheKernelsFiguresApartFromLosses() {
    Map<String, Long> counters = new LinkedHashMap<>();
    counters.put("bpf_ring_full", 2L);
    counters.put("capture_ticks", 500L);
    counters.put("capture_records", 498L);
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/luajit", List.of("luajit")), 0, 1,
        10_000_000L, "bpf", List.of(), List.of(), counters);
    var summary = new RecordSession.Summary(498, 498, 1, Map.of(), counters, 0, 0, 0, 0, 0, 99);
    String printed = print(new RecordSession.Result(r, summary, null, false, false));
    assertTrue(printed.contains("polystack: target never stopped (bpf mode)\n"), printed);
    assertTrue(printed.contains("polystack: not sampled or lost: bpf_ring_full 2\n"), printed);
    assertTrue(printed.contains("polystack: tick capture: records 498, ticks 500\n"), printed);
  }

  @Test
  void theSummarySaysWhenTicksNotTakenWeighOnTheNextSamples() {
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/luajit", List.of("luajit")), 0, 1,
        10_000_000L, "ptrace", List.of(), List.of(), Map.of("late_tick", 25L));
    var summary = new RecordSession.Summary(266, 294, 1, Map.of(), Map.of("late_tick", 25L), 266,
        150_000, 140_000, 300_000, 900_000, 146.4);
    String printed = print(new RecordSession.Result(r, summary, null, true, false));
    assertTrue(printed.contains("polystack: 28 ticks not taken or not kept count in the next"
        + " sample's time (294 periods in the profile)\n"), printed);

    var onTime = new RecordSession.Summary(266, 266, 1, Map.of(), Map.of(), 266, 150_000,
        140_000, 300_000, 900_000, 99.0);
    printed = print(new RecordSession.Result(r, onTime, null, true, false));
    assertTrue(!printed.contains("periods"), printed);
  }

  private static String print(RecordSession.Result result) {
    StringWriter err = new StringWriter();
    Summaries.print(new Console(new PrintWriter(new StringWriter()), new PrintWriter(err)),
        result, null);
    return err.toString();
  }
}
