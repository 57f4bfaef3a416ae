package dev.polystack.otel.counters;

import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Looks counters up by name: the host's declarations ({@link HostCounters}), a plug-in's own
 * counters in their namespace ({@code plugin.<id>.<name>}), and anything else as an undeclared
 * loss, so that a name no declaration knows is still shown and counted, never dropped.
 */
public final class Counters {
  private Counters() {}

  /** The namespace of plug-in counters. */
  public static final String PLUGIN_PREFIX = "plugin.";
  /** The prefix of the bpf capture's figures, which {@code --stats-json} strips. */
  public static final String CAPTURE_PREFIX = "capture_";

  private static final Map<String, Counter> BY_NAME = byName();

  /** The declaration of {@code name}, if the host declares it. */
  public static Optional<Counter> declared(String name) {
    return Optional.ofNullable(BY_NAME.get(name));
  }

  /**
   * The counter {@code name} stands for: its declaration; for {@code plugin.<id>.<name>} a
   * plug-in note; for anything else an undeclared loss in {@link LossGroup#OTHER}.
   */
  public static Counter classify(String name) {
    Counter c = BY_NAME.get(name);
    if (c != null) {
      return c;
    }
    if (name.startsWith(PLUGIN_PREFIX)) {
      return new Counter(safe(name), CounterKind.PLUGIN_NOTE, LossGroup.NONE, "event",
          "A plug-in's own count of how it read the target.");
    }
    return new Counter(safe(name), CounterKind.LOSS, LossGroup.OTHER, "event",
        "A counter no declaration names, shown as a loss so that it is not dropped.");
  }

  /**
   * The name of plug-in {@code pluginId}'s counter {@code name}: {@code plugin.<id>.<name>},
   * with anything outside the counter name alphabet replaced by {@code _}.
   */
  public static String pluginCounter(String pluginId, String name) {
    return safe(PLUGIN_PREFIX + pluginId + "." + name);
  }

  /** {@code counters} split by kind (each part sorted by name; only kinds present appear). */
  public static Map<CounterKind, Map<String, Long>> byKind(Map<String, Long> counters) {
    Map<CounterKind, Map<String, Long>> out = new EnumMap<>(CounterKind.class);
    counters.forEach((name, n) -> out.computeIfAbsent(classify(name).kind(),
        k -> new TreeMap<>()).merge(name, n, Long::sum));
    return out;
  }

  /** The counters of one kind in {@code counters}, sorted by name. */
  public static Map<String, Long> ofKind(Map<String, Long> counters, CounterKind kind) {
    return byKind(counters).getOrDefault(kind, Map.of());
  }

  /** Sum of the loss counters in {@code counters} (undeclared names included). */
  public static long lost(Map<String, Long> counters) {
    return ofKind(counters, CounterKind.LOSS).values().stream().mapToLong(Long::longValue).sum();
  }

  /** A name as a counter may carry it: at most 256 characters of [A-Za-z0-9_.:-]. */
  static String safe(String name) {
    String s = name.length() > 256 ? name.substring(0, 256) : name;
    s = s.replaceAll("[^A-Za-z0-9_.:-]", "_");
    return s.isEmpty() ? "_" : s;
  }

  private static Map<String, Counter> byName() {
    Map<String, Counter> out = new HashMap<>();
    for (Counter c : HostCounters.all()) {
      if (out.put(c.name(), c) != null) {
        throw new IllegalStateException("counter " + c.name() + " is declared twice");
      }
    }
    return Map.copyOf(out);
  }
}
