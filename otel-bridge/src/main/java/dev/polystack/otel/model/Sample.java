package dev.polystack.otel.model;

import java.util.Map;
import java.util.Objects;

/**
 * One sample of one thread, or several samples of one thread with the same stack merged.
 *
 * @param tid the thread id
 * @param threadName the thread's name when it was sampled
 * @param epochNanos wall-clock time of the sample (of the last one, when merged), nanoseconds
 *     since the Unix epoch
 * @param stack the stack, leaf first
 * @param attributes per-sample facts such as the LuaJIT vmstate or trace number: each value a
 *     {@code String}, {@code Long}, {@code Double} or {@code Boolean} (an {@code Integer} is kept
 *     as a {@code Long}), as OTLP carries them
 * @param periods the sampling periods this sample stands for: 1, or more when ticks of this
 *     thread before it were not taken (the sampler fell behind, or a walk could not be kept).
 *     Their time is carried by the next sample, as perf's sample period carries it, so a slow
 *     start-up or a busy host does not take time away from what the target ran meanwhile.
 *     For merged samples, the sum of theirs.
 * @param count how many samples this stands for: 1 for a sample as it was taken; more when a
 *     recording that already held its bound of timed samples merged later samples of the same
 *     thread, stack and attributes into one (their times are not kept: see {@code
 *     docs/reliability.md}). Never more than {@code periods}.
 * @param values one per the recording's {@link Recording#sampleTypes()} (allocation samples);
 *     empty for CPU samples
 * @param pluginValues what runtime plug-ins measured of a CPU sample, by their own sample types
 *     (each >= 0; for merged samples, the sum of theirs); empty for most samples
 */
public record Sample(int tid, String threadName, long epochNanos, StackTrace stack,
    Map<String, ?> attributes, int periods, int count, long[] values,
    Map<ValueType, Long> pluginValues) {
  private static final long[] NO_VALUES = new long[0];

  public Sample {
    pluginValues = Map.copyOf(pluginValues);
    for (Map.Entry<ValueType, Long> e : pluginValues.entrySet()) {
      if (e.getValue() < 0) {
        throw new IllegalArgumentException("sample value " + e.getKey().type() + " is "
            + e.getValue() + "; values are >= 0");
      }
    }
    values = values.length == 0 ? NO_VALUES : values.clone();
    Objects.requireNonNull(threadName, "threadName");
    Objects.requireNonNull(stack, "stack");
    attributes = typed(attributes);
    if (periods < 1) {
      throw new IllegalArgumentException("a sample stands for at least one period: " + periods);
    }
    if (count < 1 || count > periods) {
      throw new IllegalArgumentException("a sample stands for 1.." + periods + " samples: "
          + count);
    }
  }

  private static Map<String, ?> typed(Map<String, ?> attributes) {
    boolean ints = false;
    for (Map.Entry<String, ?> e : attributes.entrySet()) {
      Object v = e.getValue();
      if (v instanceof Integer) {
        ints = true;
      } else if (!(v instanceof String || v instanceof Long || v instanceof Double
          || v instanceof Boolean)) {
        throw new IllegalArgumentException("sample attribute '" + e.getKey() + "' is a "
            + (v == null ? "null" : v.getClass().getName())
            + "; values are String, Long, Double or Boolean");
      }
    }
    if (!ints) {
      return Map.copyOf(attributes); // the same map when it is one already
    }
    Map<String, Object> out = new java.util.HashMap<>();
    attributes.forEach((k, v) -> out.put(k, v instanceof Integer i ? (Object) (long) i : v));
    return Map.copyOf(out);
  }

  /** A sample without plug-in values. */
  public Sample(int tid, String threadName, long epochNanos, StackTrace stack,
      Map<String, ?> attributes, int periods, int count, long[] values) {
    this(tid, threadName, epochNanos, stack, attributes, periods, count, values, Map.of());
  }

  /** A CPU sample: no values beyond its periods and count. */
  public Sample(int tid, String threadName, long epochNanos, StackTrace stack,
      Map<String, ?> attributes, int periods, int count) {
    this(tid, threadName, epochNanos, stack, attributes, periods, count, NO_VALUES);
  }

  @Override
  public long[] values() {
    return values.length == 0 ? values : values.clone();
  }

  /** A sample as it was taken, standing for {@code periods} periods. */
  public Sample(int tid, String threadName, long epochNanos, StackTrace stack,
      Map<String, ?> attributes, int periods) {
    this(tid, threadName, epochNanos, stack, attributes, periods, 1);
  }

  /** A sample as it was taken, standing for one period. */
  public Sample(int tid, String threadName, long epochNanos, StackTrace stack,
      Map<String, ?> attributes) {
    this(tid, threadName, epochNanos, stack, attributes, 1, 1);
  }

  /** Whether this stands for more than one sample (and its time is only the last one's). */
  public boolean merged() {
    return count > 1;
  }

  /** The samples {@code samples} stand for: their count, merged ones by what they merged. */
  public static long count(Iterable<Sample> samples) {
    long n = 0;
    for (Sample s : samples) {
      n += s.count();
    }
    return n;
  }
}
