package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.polystack.host.sampling.RecordSession;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SummariesTest {

  @Test
  void statsJsonCarriesPausesAndCountersSortedByReason() {
    Map<String, Long> losses = new LinkedHashMap<>();
    losses.put("late_tick", 3L);
    losses.put("dropped \"x\"", 1L);
    var summary = new RecordSession.Summary(600, 1, Map.of("no_module", 2L), losses, 600, 41_000,
        38_000, 95_000, 120_000, 98.96);
    assertEquals("{\"samples\": 600, \"threads\": 1, \"achieved_hz\": 98.960, \"pause_ns\":"
        + " {\"count\": 600, \"mean\": 41000, \"median\": 38000, \"p99\": 95000, \"max\": 120000},"
        + " \"errors\": {\"no_module\": 2}, \"losses\": {\"dropped \\\"x\\\"\": 1,"
        + " \"late_tick\": 3}}\n", Summaries.statsJson(summary));
  }

  @Test
  void statsJsonWithNoSamples() {
    var summary = new RecordSession.Summary(0, 0, Map.of(), Map.of(), 0, 0, 0, 0, 0, 0);
    assertEquals("{\"samples\": 0, \"threads\": 0, \"achieved_hz\": 0.000, \"pause_ns\":"
        + " {\"count\": 0, \"mean\": 0, \"median\": 0, \"p99\": 0, \"max\": 0}, \"errors\": {},"
        + " \"losses\": {}}\n", Summaries.statsJson(summary));
  }
}
