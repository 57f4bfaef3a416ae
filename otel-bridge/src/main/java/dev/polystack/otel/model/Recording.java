package dev.polystack.otel.model;

import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Everything one profiling session produced, ready to be written in any output format.
 *
 * @param target the process
 * @param startEpochNanos when sampling started
 * @param endEpochNanos when it ended
 * @param periodNanos nominal time between two samples of a thread (1e9 / rate)
 * @param mode how samples were taken ({@code ptrace}, {@code perf}, {@code snapshot})
 * @param modules mapped files, for native frame labels and mapping tables
 * @param samples every sample, in time order
 * @param losses what was lost and why (dropped samples by reason, lost ring records), by name
 * @param sampleTypes what each sample's {@link Sample#values()} measure; empty: CPU samples,
 *     weighed by their periods
 * @param defaultType the index in {@code sampleTypes} that single-value outputs (folded, the
 *     flame graph) and pprof's default show; 0 when there are none
 */
public record Recording(
    TargetInfo target,
    long startEpochNanos,
    long endEpochNanos,
    long periodNanos,
    String mode,
    List<ModuleInfo> modules,
    List<Sample> samples,
    Map<String, Long> losses,
    List<ValueType> sampleTypes,
    int defaultType) {

  public Recording {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(mode, "mode");
    if (periodNanos <= 0) {
      throw new IllegalArgumentException("period must be > 0");
    }
    if (endEpochNanos < startEpochNanos) {
      throw new IllegalArgumentException("recording ends before it starts");
    }
    modules = modules.stream().sorted(Comparator.comparingLong(ModuleInfo::start)).toList();
    samples = List.copyOf(samples);
    losses = Map.copyOf(losses);
    sampleTypes = List.copyOf(sampleTypes);
    if (sampleTypes.isEmpty() ? defaultType != 0
        : defaultType < 0 || defaultType >= sampleTypes.size()) {
      throw new IllegalArgumentException("default type " + defaultType + " of "
          + sampleTypes.size());
    }
    for (Sample s : samples) {
      if (s.values().length != sampleTypes.size()) {
        throw new IllegalArgumentException("a sample has " + s.values().length
            + " values for " + sampleTypes.size() + " sample types");
      }
    }
  }

  /** A recording of CPU samples, weighed by their periods. */
  public Recording(TargetInfo target, long startEpochNanos, long endEpochNanos, long periodNanos,
      String mode, List<ModuleInfo> modules, List<Sample> samples, Map<String, Long> losses) {
    this(target, startEpochNanos, endEpochNanos, periodNanos, mode, modules, samples, losses,
        List.of(), 0);
  }

  /** This recording with {@code type} as the value single-value outputs show. */
  public Recording withDefaultType(String type) {
    for (int i = 0; i < sampleTypes.size(); i++) {
      if (sampleTypes.get(i).type().equals(type)) {
        return new Recording(target, startEpochNanos, endEpochNanos, periodNanos, mode, modules,
            samples, losses, sampleTypes, i);
      }
    }
    throw new IllegalArgumentException("no sample type " + type + " in this recording");
  }

  /**
   * What the period of a recording with sample types counts (pprof's and OTLP's period type):
   * calls between two stacks in a calls recording, bytes between two allocation samples else.
   */
  public ValueType periodType() {
    return sampleTypes.equals(List.of(ValueType.CALLS)) ? ValueType.CALLS : ValueType.SPACE;
  }

  /**
   * The sample types runtime plug-ins measured in this recording's CPU samples ({@link
   * Sample#pluginValues()}), by name: pprof and OTLP carry one more value per type, beside
   * the sample count and CPU time; the single-value outputs leave them out.
   */
  public List<ValueType> pluginTypes() {
    java.util.TreeMap<String, ValueType> types = new java.util.TreeMap<>();
    for (Sample s : samples) {
      for (ValueType t : s.pluginValues().keySet()) {
        types.putIfAbsent(t.type(), t);
      }
    }
    return List.copyOf(types.values());
  }

  /** What a sample weighs in single-value outputs: its default value, or its periods. */
  public long weight(Sample s) {
    return sampleTypes.isEmpty() ? s.periods() : s.values()[defaultType];
  }

  /** The module containing {@code address}, by binary search. */
  public Optional<ModuleInfo> moduleAt(long address) {
    int lo = 0;
    int hi = modules.size() - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      ModuleInfo m = modules.get(mid);
      if (Long.compareUnsigned(address, m.start()) < 0) {
        hi = mid - 1;
      } else if (Long.compareUnsigned(address, m.end()) >= 0) {
        lo = mid + 1;
      } else {
        return Optional.of(m);
      }
    }
    return Optional.empty();
  }
}
