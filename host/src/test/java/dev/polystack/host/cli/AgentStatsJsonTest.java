package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.polystack.host.pipeline.PipelineStats;
import dev.polystack.otel.otlp.ProfileExporter;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class AgentStatsJsonTest {

  @Test
  void eachCounterGoesWhereItsKindPutsIt() {
    Map<String, Long> counters = Map.of(
        "process_gone", 3L, // a loss
        "symbols_unreadable", 2L, // a note of the host's
        "plugin.luajit.save_l_invalid", 106L, // a plug-in's note
        "capture_ticks", 610L); // a capture figure
    PipelineStats stats = new PipelineStats(600, 2, 35, counters, Map.of("no_module", 4L),
        Map.of("capture_records", 610L, "process_evicted", 1L), Map.of());
    String json = AgentCommand.statsJson(stats,
        new ProfileExporter.Stats(33, 600, 0, 0, 0, List.of()), 330.4, 5.05, 176_422_912);

    assertEquals("{\"process_gone\":3}", object(json, "losses"));
    assertEquals("{\"no_module\":4}", object(json, "errors"));
    assertEquals("{\"capture_records\":610,\"capture_ticks\":610,\"process_evicted\":1}",
        object(json, "capture"));
    assertEquals("{\"plugin.luajit.save_l_invalid\":106,\"symbols_unreadable\":2}",
        object(json, "notes"));
  }

  private static String object(String json, String key) {
    Matcher m = Pattern.compile("\"" + key + "\":(\\{[^}]*\\})").matcher(json);
    if (!m.find()) {
      throw new AssertionError("no " + key + " in " + json);
    }
    return m.group(1);
  }
}
