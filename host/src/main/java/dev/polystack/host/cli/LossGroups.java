package dev.polystack.host.cli;

import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.counters.LossGroup;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The summary's loss line, from the counters' declarations ({@code HostCounters}): samples
 * missing, grouped by what a reader can do about it. The exact reasons stay in
 * {@code --stats-json} and {@code -v}.
 */
final class LossGroups {
  private LossGroups() {}

  /**
   * The counters that are missing samples: the declared losses, and any name no declaration
   * knows (shown "for other reasons" rather than dropped). Capture figures, notes and plug-in
   * notes are not.
   */
  static Map<String, Long> samplesLost(Map<String, Long> counters) {
    Map<String, Long> out = new LinkedHashMap<>();
    Counters.ofKind(counters, CounterKind.LOSS).forEach((k, v) -> {
      if (v > 0) {
        out.put(k, v);
      }
    });
    return out;
  }

  /** The sum of {@link #samplesLost}. */
  static long total(Map<String, Long> counters) {
    return samplesLost(counters).values().stream().mapToLong(Long::longValue).sum();
  }

  /** {@code lost 12 samples: 10 while polystack was busy, 2 threads gone}. */
  static String describe(Map<String, Long> lost) {
    long total = 0;
    Map<LossGroup, Long> byGroup = new EnumMap<>(LossGroup.class);
    for (Map.Entry<String, Long> e : lost.entrySet()) {
      total += e.getValue();
      byGroup.merge(group(e.getKey()), e.getValue(), Long::sum);
    }
    List<String> parts = new ArrayList<>();
    byGroup.forEach((g, n) -> {
      if (n > 0) {
        parts.add(n + " " + g.words());
      }
    });
    return "lost " + Summaries.plural(total, "sample") + ": " + String.join(", ", parts);
  }

  /** The group of a loss; {@link LossGroup#OTHER} for a name that is not a declared loss. */
  static LossGroup group(String reason) {
    LossGroup g = Counters.classify(reason).group();
    return g == LossGroup.NONE ? LossGroup.OTHER : g;
  }
}
