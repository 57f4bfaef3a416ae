package dev.polystack.host.sys;

import java.time.Instant;

/** CLOCK_MONOTONIC, the clock perf, BPF and HotSpot's System.nanoTime() stamp events with. */
public final class MonotonicClock {
  private MonotonicClock() {}

  /**
   * Wall clock minus CLOCK_MONOTONIC, in nanoseconds, from the tightest of a few bracketed
   * readings, so an event's monotonic time maps to wall time within a few microseconds (NTP
   * slewing during the run aside).
   */
  public static long epochOffsetNanos() {
    long best = Long.MAX_VALUE;
    long offset = 0;
    for (int i = 0; i < 5; i++) {
      long before = System.nanoTime();
      Instant now = Instant.now();
      long after = System.nanoTime();
      if (after - before < best) {
        best = after - before;
        long wall = now.getEpochSecond() * 1_000_000_000L + now.getNano();
        offset = wall - (before + (after - before) / 2);
      }
    }
    return offset;
  }
}
