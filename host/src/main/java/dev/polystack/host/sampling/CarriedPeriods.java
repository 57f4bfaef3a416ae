package dev.polystack.host.sampling;

import java.util.HashMap;
import java.util.Map;

/**
 * The sampling periods a thread's next kept sample carries besides its own: ticks the loop
 * missed while it was behind (carried by every thread sampled at the next tick) and the thread's
 * own samples that were taken but not kept (learning walks, walks that missed a page).
 *
 * <p>Without it such gaps take time away from whatever the target ran meanwhile. They are not
 * spread evenly: a cold JVM's first LuaJIT walks are slow, so a launched program lost its first
 * phase's share (measured in docs/benchmarks.md, "Figures behind the code's choices"). Carrying the
 * time to the next sample is perf's answer (a sample's period is the time since the previous one);
 * the ticks stay counted as lost.
 *
 * <p>At most one second of periods is carried: after a longer stall of the host, the state at
 * the next sample says little about the whole of it, and one sample must not outweigh the rest.
 */
public final class CarriedPeriods {
  /** Threads with something carried, beyond which exited threads' entries are dropped. */
  static final int MAX_THREADS = 4096;

  private final int maxPeriods;
  private final Map<Integer, Integer> notKept = new HashMap<>();
  private long lateTicks;

  /** @param periodNanos the sampling period */
  public CarriedPeriods(long periodNanos) {
    if (periodNanos <= 0) {
      throw new IllegalArgumentException("period must be positive: " + periodNanos);
    }
    this.maxPeriods = (int) Math.max(1, Math.min(Integer.MAX_VALUE, 1_000_000_000L / periodNanos));
  }

  /** The loop missed {@code ticks} ticks: the threads sampled next stand for them too. */
  public void late(long ticks) {
    if (ticks > 0) {
      lateTicks = Math.min(maxPeriods, lateTicks + ticks);
    }
  }

  /**
   * The tick after missed ones samples {@code tid}: the thread's next kept sample, this one or a
   * later one, carries them.
   */
  public void sampling(int tid) {
    add(tid, (int) lateTicks);
  }

  /** A sample of {@code tid} was taken but not kept: its next one stands for it too. */
  public void notKept(int tid) {
    add(tid, 1);
  }

  /** The periods of a sample of {@code tid} kept now: 1 plus what it carries. */
  public int take(int tid) {
    Integer own = notKept.remove(tid);
    return (int) Math.min(maxPeriods, 1L + (own == null ? 0 : own));
  }

  /** The tick after the missed ones is over: its threads have them now. */
  public void tickDone() {
    lateTicks = 0;
  }

  private void add(int tid, int periods) {
    if (periods == 0) {
      return;
    }
    if (notKept.size() >= MAX_THREADS && !notKept.containsKey(tid)) {
      notKept.clear();
    }
    notKept.merge(tid, periods, (a, b) -> (int) Math.min(maxPeriods, (long) a + b));
  }
}
