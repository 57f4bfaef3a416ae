package dev.polystack.otel.counters;

import java.util.Map;
import java.util.Optional;

/**
 * Looks a record's counters up by name ({@link HostCounters#registry()}): the host's
 * declarations, a plug-in's own counters in their namespace ({@code plugin.<id>.<name>}), and
 * anything else as an undeclared loss, so that a name no declaration knows is still shown and
 * counted, never dropped.
 */
public final class Counters {
  private Counters() {}

  /** The namespace of plug-in counters. */
  public static final String PLUGIN_PREFIX = "plugin.";
  /** The prefix of the bpf capture's figures, which {@code --stats-json} strips. */
  public static final String CAPTURE_PREFIX = "capture_";

  /** The declaration of {@code name}, if the host declares it ({@link HostCounters}). */
  public static Optional<Counter> declared(String name) {
    return HostCounters.registry().declared(name);
  }

  /**
   * The counter {@code name} stands for in a record's report: its declaration in
   * {@link HostCounters}; for {@code plugin.<id>.<name>} a plug-in note; for anything else an
   * undeclared loss in {@link LossGroup#OTHER}.
   */
  public static Counter classify(String name) {
    return HostCounters.registry().classify(name);
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
    return HostCounters.registry().byKind(counters);
  }

  /** The counters of one kind in {@code counters}, sorted by name. */
  public static Map<String, Long> ofKind(Map<String, Long> counters, CounterKind kind) {
    return HostCounters.registry().ofKind(counters, kind);
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
}
