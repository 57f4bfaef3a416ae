package dev.polystack.host.alloc;

import java.util.function.IntSupplier;

/**
 * Sampling by bytes, as jemalloc, tcmalloc and Go do: the gaps between sampled bytes are
 * exponential with mean {@code R}, so each allocated byte is sampled with probability
 * {@code 1/R} whatever the allocation sizes, and a sampled allocation of {@code s} bytes stands
 * for {@code 1 / (1 - exp(-s/R))} allocations of its size (the probability that a gap ended
 * inside it). The kernel draws the gaps from {@link #table} with integers only
 * (alloc_probe.h); {@link Countdown} is the same arithmetic in Java.
 */
public final class ByteSampling {
  /** Default mean bytes between samples. */
  public static final long DEFAULT_MEAN = 512 << 10;
  /** Entries of the inverse CDF table (alloc_probe.h EXP_TABLE). */
  public static final int TABLE = 4096;

  private ByteSampling() {}

  /** {@code T[i] = mean * -ln(1 - i/4096)}, rounded: the gap at quantile {@code i/4096}. */
  public static long[] table(long mean) {
    if (mean < 0) {
      throw new IllegalArgumentException("mean bytes must be >= 0: " + mean);
    }
    long[] t = new long[TABLE];
    for (int i = 0; i < TABLE; i++) {
      t[i] = Math.round(mean * -Math.log1p(-(double) i / TABLE));
    }
    return t;
  }

  /**
   * How many allocations of {@code size} bytes one sample of that size stands for at mean
   * {@code mean}; 1 when every call is sampled ({@code mean} 0).
   */
  public static double weight(long size, long mean) {
    if (mean <= 0) {
      return 1;
    }
    if (size <= 0) {
      return 1; // a zero-byte call is sampled only at a gap's end; it stands for itself
    }
    return 1 / -Math.expm1(-(double) size / mean);
  }

  /** The kernel's per-CPU countdown (alloc_probe.h sampled and draw), for tests and docs. */
  public static final class Countdown {
    private final long mean;
    private final long[] table;
    private final IntSupplier random;
    private long left;

    /** @param random 32 random bits per call, as bpf_get_prandom_u32 */
    public Countdown(long mean, IntSupplier random) {
      if (mean <= 0) {
        throw new IllegalArgumentException("a countdown needs a mean > 0: " + mean);
      }
      this.mean = mean;
      this.table = table(mean);
      this.random = random;
      this.left = draw();
    }

    /** Whether an allocation of {@code size} bytes is sampled. */
    public boolean sampled(long size) {
      left -= Math.min(size, 1L << 48);
      if (left > 0) {
        return false;
      }
      for (int i = 0; i < 4 && left <= 0; i++) {
        left += draw();
      }
      if (left <= 0) {
        left = draw();
      }
      return true;
    }

    long draw() {
      int r = random.getAsInt();
      int i = r >>> 20;
      long f = (r >>> 4) & 0xffff;
      if (i >= TABLE - 1) {
        return table[i] + mean;
      }
      return table[i] + (((table[i + 1] - table[i]) * f) >> 16);
    }
  }
}
