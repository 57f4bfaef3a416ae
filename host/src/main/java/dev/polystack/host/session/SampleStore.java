package dev.polystack.host.session;

import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.ValueType;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Samples held for an output, in bounded memory. The first {@code maxTimed} samples are kept
 * each with its time, in columns (about 24 bytes a sample, where a {@link Sample} object and its
 * list slot take 44 or more); later ones are merged per thread, thread name and stack into one
 * {@link Sample#merged()} entry each, at most {@code maxMerged} of them; a sample that would need
 * one more is refused ({@link #add} returns false) for the caller to count as lost.
 * docs/reliability.md gives the bounds and what merging keeps.
 *
 * <p>Not thread-safe: the processing stage's lock guards it.
 */
final class SampleStore {
  /** Rows per column chunk: columns grow by chunks, never by copying what they hold. */
  static final int CHUNK = 1 << 12;

  /** A distinct stack with the attributes its samples carry, interned by the processor. */
  interface Shape {
    dev.polystack.otel.model.StackTrace stack();

    /** Values are String, Long, Double or Boolean (see the model's Sample). */
    Map<String, Object> attributes();
  }

  private record MergeKey(Shape shape, int tid, String threadName) {}

  private static final long[] NO_VALUES = new long[0];

  private final int maxTimed;
  private final int maxMerged;
  private final List<int[]> tids = new ArrayList<>();
  private final List<long[]> times = new ArrayList<>();
  private final List<int[]> periods = new ArrayList<>();
  private final List<Shape[]> shapes = new ArrayList<>();
  private final List<String[]> names = new ArrayList<>();
  /**
   * Plug-in values of the timed samples, a column allocated only for chunks that have any (most
   * have none); the processor interns the maps, so a row costs a reference.
   */
  private final List<Map<ValueType, Long>[]> values = new ArrayList<>();
  private int timed;
  /** count, periods and last time of each merged entry, in order of first merge. */
  private final Map<MergeKey, long[]> merged = new LinkedHashMap<>();
  /** The sums of the plug-in values of merged entries that have any. */
  private final Map<MergeKey, Map<ValueType, Long>> mergedValues = new HashMap<>();
  private long mergedSamples;
  /** Merged entries that filled up (see {@link #add}); as rare as 2^31 periods of one stack. */
  private final List<Sample> retired = new ArrayList<>();

  SampleStore(int maxTimed, int maxMerged) {
    if (maxTimed < 0 || maxMerged < 0) {
      throw new IllegalArgumentException("negative bound: " + maxTimed + ", " + maxMerged);
    }
    this.maxTimed = maxTimed;
    this.maxMerged = maxMerged;
  }

  /** Holds a sample; false when it is over both bounds (a new thread or stack, all full). */
  boolean add(int tid, String threadName, long epochNanos, Shape shape, int samplePeriods) {
    return add(tid, threadName, epochNanos, shape, samplePeriods, Map.of());
  }

  /** As above, with what plug-ins measured of the sample ({@code Sample#pluginValues}). */
  boolean add(int tid, String threadName, long epochNanos, Shape shape, int samplePeriods,
      Map<ValueType, Long> pluginValues) {
    if (timed < maxTimed) {
      int chunk = timed / CHUNK;
      int row = timed % CHUNK;
      if (chunk == tids.size()) {
        values.add(null);
        tids.add(new int[CHUNK]);
        times.add(new long[CHUNK]);
        periods.add(new int[CHUNK]);
        shapes.add(new Shape[CHUNK]);
        names.add(new String[CHUNK]);
      }
      tids.get(chunk)[row] = tid;
      times.get(chunk)[row] = epochNanos;
      periods.get(chunk)[row] = samplePeriods;
      shapes.get(chunk)[row] = shape;
      names.get(chunk)[row] = threadName;
      if (!pluginValues.isEmpty()) {
        if (values.get(chunk) == null) {
          @SuppressWarnings("unchecked")
          Map<ValueType, Long>[] column = new Map[CHUNK];
          values.set(chunk, column);
        }
        values.get(chunk)[row] = pluginValues;
      }
      timed++;
      return true;
    }
    MergeKey key = new MergeKey(shape, tid, threadName);
    long[] m = merged.get(key);
    if (m == null) {
      if (merged.size() >= maxMerged) {
        return false;
      }
      m = new long[3];
      merged.put(key, m);
    }
    if (m[1] + samplePeriods > Integer.MAX_VALUE) {
      // A Sample's periods are an int: this entry is full; a new one (same key) takes over.
      retired.add(toSample(key, m, mergedValues.remove(key)));
      m = new long[3];
      merged.put(key, m);
    }
    if (!pluginValues.isEmpty()) {
      Map<ValueType, Long> sums = mergedValues.computeIfAbsent(key, k -> new HashMap<>());
      pluginValues.forEach((type, v) -> sums.merge(type, v, Math::addExact));
    }
    m[0]++;
    m[1] += samplePeriods;
    m[2] = epochNanos;
    mergedSamples++;
    return true;
  }

  /** Samples merged without their times so far. */
  long mergedSamples() {
    return mergedSamples;
  }

  boolean isEmpty() {
    return timed == 0 && merged.isEmpty() && retired.isEmpty();
  }

  /** The timed samples in the order they were added, then the merged entries. */
  List<Sample> samples() {
    List<Sample> out = new ArrayList<>(timed + merged.size() + retired.size());
    for (int i = 0; i < timed; i++) {
      int chunk = i / CHUNK;
      int row = i % CHUNK;
      Shape shape = shapes.get(chunk)[row];
      out.add(new Sample(tids.get(chunk)[row], names.get(chunk)[row], times.get(chunk)[row],
          shape.stack(), shape.attributes(), periods.get(chunk)[row], 1, NO_VALUES,
          pluginValuesAt(chunk, row)));
    }
    out.addAll(retired);
    merged.forEach((k, m) -> out.add(toSample(k, m, mergedValues.get(k))));
    return out;
  }

  private Map<ValueType, Long> pluginValuesAt(int chunk, int row) {
    Map<ValueType, Long>[] column = values.get(chunk);
    return column == null || column[row] == null ? Map.of() : column[row];
  }

  private static Sample toSample(MergeKey k, long[] m, Map<ValueType, Long> values) {
    return new Sample(k.tid(), k.threadName(), m[2], k.shape().stack(), k.shape().attributes(),
        (int) m[1], (int) Math.min(m[0], m[1]), NO_VALUES, values == null ? Map.of() : values);
  }

  void clear() {
    tids.clear();
    times.clear();
    periods.clear();
    shapes.clear();
    names.clear();
    timed = 0;
    values.clear();
    merged.clear();
    mergedValues.clear();
    retired.clear();
  }
}
