package dev.polystack.host.probes;

import java.util.Map;
import java.util.TreeMap;

/**
 * Statistics of one population of calls: counts, errors by errno, records emitted after the
 * filters, min/avg/max duration and log2 latency buckets (bucket i holds durations in
 * [2^i, 2^(i+1)) ns; bucket 0 also holds 0). Buckets of disjoint populations add up, so the
 * threads' buckets sum to the session's.
 */
public final class LatencyStats {
  public static final int BUCKETS = 64;

  private long calls;
  private long emitted;
  private long totalNanos;
  private long minNanos = Long.MAX_VALUE;
  private long maxNanos;
  private final long[] buckets = new long[BUCKETS];
  private final Map<String, Long> errors = new TreeMap<>();

  /**
   * The statistics of durations known only by their buckets (a kernel histogram), their sum and
   * their largest value; the minimum is taken as the lowest non-empty bucket's bottom.
   */
  public static LatencyStats ofBuckets(long[] buckets, long totalNanos, long maxNanos) {
    if (buckets.length != BUCKETS || totalNanos < 0 || maxNanos < 0) {
      throw new IllegalArgumentException(buckets.length + " buckets, total " + totalNanos
          + ", max " + maxNanos);
    }
    LatencyStats s = new LatencyStats();
    for (int i = 0; i < BUCKETS; i++) {
      if (buckets[i] < 0) {
        throw new IllegalArgumentException("bucket " + i + " < 0");
      }
      s.buckets[i] = buckets[i];
      s.calls += buckets[i];
      if (buckets[i] > 0 && s.minNanos == Long.MAX_VALUE) {
        s.minNanos = i == 0 ? 0 : 1L << i;
      }
    }
    s.totalNanos = totalNanos;
    s.maxNanos = maxNanos;
    return s;
  }

  void add(long durationNanos, String errno) {
    long d = Math.max(0, durationNanos);
    calls++;
    totalNanos += d;
    minNanos = Math.min(minNanos, d);
    maxNanos = Math.max(maxNanos, d);
    buckets[bucket(d)]++;
    if (errno != null) {
      errors.merge(errno, 1L, Long::sum);
    }
  }

  void emitted() {
    emitted++;
  }

  static int bucket(long nanos) {
    return nanos <= 1 ? 0 : 63 - Long.numberOfLeadingZeros(nanos);
  }

  public long calls() {
    return calls;
  }

  public long emittedCount() {
    return emitted;
  }

  public long errorCount() {
    return errors.values().stream().mapToLong(Long::longValue).sum();
  }

  public Map<String, Long> errors() {
    return Map.copyOf(errors);
  }

  public long totalNanos() {
    return totalNanos;
  }

  public long minNanos() {
    return calls == 0 ? 0 : minNanos;
  }

  public long maxNanos() {
    return maxNanos;
  }

  public long avgNanos() {
    return calls == 0 ? 0 : totalNanos / calls;
  }

  public long[] buckets() {
    return buckets.clone();
  }

  /**
   * An upper bound of the {@code q} quantile (0..1): the top of the first bucket whose cumulative
   * count reaches q of the calls, capped by the largest duration seen.
   */
  public long quantileUpperBound(double q) {
    if (calls == 0) {
      return 0;
    }
    long rank = Math.max(1, (long) Math.ceil(q * calls));
    long seen = 0;
    for (int i = 0; i < BUCKETS; i++) {
      seen += buckets[i];
      if (seen >= rank) {
        long top = i >= 62 ? Long.MAX_VALUE : (1L << (i + 1)) - 1;
        return Math.min(top, maxNanos);
      }
    }
    return maxNanos;
  }
}
