package dev.polystack.host.sampling;

import java.util.Set;

/**
 * How to sample.
 *
 * @param rateHz samples per second per thread
 * @param durationNanos how long to sample; 0 until the target exits or the user stops it
 * @param idle also sample threads that are not running (default: on-CPU threads only)
 * @param threads only these thread ids; empty for all
 * @param maxDepth frames per stack
 * @param stackBytes stack bytes copied at each capture (the rest is read page by page if needed)
 */
public record SamplingOptions(
    int rateHz, long durationNanos, boolean idle, Set<Integer> threads, int maxDepth,
    int stackBytes) {

  public static final int DEFAULT_RATE = 99;
  public static final int DEFAULT_MAX_DEPTH = 512;
  public static final int DEFAULT_STACK_BYTES = 16 << 10;

  public SamplingOptions {
    if (rateHz < 1 || rateHz > 10_000) {
      throw new IllegalArgumentException("--rate must be 1..10000 Hz, got " + rateHz);
    }
    if (durationNanos < 0) {
      throw new IllegalArgumentException("duration must not be negative");
    }
    if (maxDepth < 1 || maxDepth > 65_536) {
      throw new IllegalArgumentException("--max-depth must be 1..65536, got " + maxDepth);
    }
    if (stackBytes < 0 || stackBytes > 1 << 20) {
      throw new IllegalArgumentException("stack copy must be 0..1 MiB");
    }
    threads = Set.copyOf(threads);
  }

  public long periodNanos() {
    return 1_000_000_000L / rateHz;
  }
}
