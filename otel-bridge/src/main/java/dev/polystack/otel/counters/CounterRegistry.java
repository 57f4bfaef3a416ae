package dev.polystack.otel.counters;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The declared counters of one report (a record's summary, a vDSO trace's session summary):
 * looks counters up by name and splits a report's counters by kind. A name a declaration does
 * not know is a plug-in note in the {@code plugin.} namespace, else an undeclared loss in
 * {@link LossGroup#OTHER}, so that it is still shown and counted, never dropped.
 */
public final class CounterRegistry {
  private final List<Counter> all;
  private final Map<String, Counter> byName;

  private CounterRegistry(List<Counter> all) {
    Map<String, Counter> names = new HashMap<>();
    for (Counter c : all) {
      if (names.put(c.name(), c) != null) {
        throw new IllegalArgumentException("counter " + c.name() + " is declared twice");
      }
    }
    this.all = List.copyOf(all);
    this.byName = Map.copyOf(names);
  }

  /** The registry of the public static Counter constants of {@code declarations}, in order. */
  static CounterRegistry of(Class<?> declarations) {
    List<Counter> out = new ArrayList<>();
    for (Field f : declarations.getDeclaredFields()) {
      int m = f.getModifiers();
      if (f.getType() == Counter.class && Modifier.isStatic(m) && Modifier.isPublic(m)) {
        try {
          out.add((Counter) f.get(null));
        } catch (IllegalAccessException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    return new CounterRegistry(out);
  }

  /** Every declaration, in the order declared. */
  public List<Counter> all() {
    return all;
  }

  /** The declaration of {@code name}, if there is one. */
  public Optional<Counter> declared(String name) {
    return Optional.ofNullable(byName.get(name));
  }

  /**
   * The counter {@code name} stands for: its declaration; for {@code plugin.<id>.<name>} a
   * plug-in note; for anything else an undeclared loss in {@link LossGroup#OTHER}.
   */
  public Counter classify(String name) {
    Counter c = byName.get(name);
    if (c != null) {
      return c;
    }
    if (name.startsWith(Counters.PLUGIN_PREFIX)) {
      return new Counter(Counters.safe(name), CounterKind.PLUGIN_NOTE, LossGroup.NONE, "event",
          "A plug-in's own count of how it read the target.");
    }
    return new Counter(Counters.safe(name), CounterKind.LOSS, LossGroup.OTHER, "event",
        "A counter no declaration names, shown as a loss so that it is not dropped.");
  }

  /** {@code counters} split by kind (each part sorted by name; only kinds present appear). */
  public Map<CounterKind, Map<String, Long>> byKind(Map<String, Long> counters) {
    Map<CounterKind, Map<String, Long>> out = new EnumMap<>(CounterKind.class);
    counters.forEach((name, n) -> out.computeIfAbsent(classify(name).kind(),
        k -> new TreeMap<>()).merge(name, n, Long::sum));
    return out;
  }

  /** The counters of one kind in {@code counters}, sorted by name. */
  public Map<String, Long> ofKind(Map<String, Long> counters, CounterKind kind) {
    return byKind(counters).getOrDefault(kind, Map.of());
  }
}
