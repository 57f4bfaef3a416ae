package dev.polystack.host.session;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Target pause per sample: mean over all, percentiles from a bounded reservoir (so a long
 * recording does not grow memory).
 */
final class PauseStats {
  static final int RESERVOIR = 1 << 16;
  /** The reservoir grows as pauses come: the agent holds one per process and most never pause. */
  private static final int FIRST_CAPACITY = 64;

  private long[] reservoir = new long[0];
  private final SplittableRandom random = new SplittableRandom(42);
  private long count;
  private long total;
  private long max;

  void add(long nanos) {
    count++;
    total += nanos;
    max = Math.max(max, nanos);
    if (count <= RESERVOIR) {
      int at = (int) (count - 1);
      if (at == reservoir.length) {
        reservoir = Arrays.copyOf(reservoir, Math.min(RESERVOIR, Math.max(FIRST_CAPACITY, at * 2)));
      }
      reservoir[at] = nanos;
    } else {
      long slot = random.nextLong(count);
      if (slot < RESERVOIR) {
        reservoir[(int) slot] = nanos;
      }
    }
  }

  long count() {
    return count;
  }

  long maxNanos() {
    return max;
  }

  long meanNanos() {
    return count == 0 ? 0 : total / count;
  }

  /** The q-quantile (0..1) of the recorded pauses, 0 when there are none. */
  long quantileNanos(double q) {
    int n = (int) Math.min(count, RESERVOIR);
    if (n == 0) {
      return 0;
    }
    long[] sorted = Arrays.copyOf(reservoir, n);
    Arrays.sort(sorted);
    int index = (int) Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1));
    return sorted[index];
  }
}
