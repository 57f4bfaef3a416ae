package dev.polystack.host.sampling.nostop;

import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sys.SyscallException;
import java.util.function.BooleanSupplier;

/**
 * The loop of the samplers that never stop the target (bpf and perf modes): poll the kernel's
 * rings, then look after the session at a slower pace, until the user stops, the duration ends
 * or the target exits.
 */
final class PollLoop {
  /**
   * Longest poll() wait in the first {@link #SETTLE_NANOS}: the first walks find the runtimes'
   * state and the first plans follow them, so records are read soon after their tick.
   */
  static final int POLL_MILLIS = 10;

  /**
   * Longest poll() wait after that: bounds how late a stop request is noticed (the duration's
   * end is waited for exactly). The kernel wakes the reader when a ring fills up, so a longer
   * wait batches records instead of losing them; each wake-up costs the host a context switch
   * and, on a VM, a timer exit: 100 a second were most of an idle record's CPU (see
   * docs/benchmarks-host-cost.md).
   */
  static final int SETTLED_POLL_MILLIS = 100;

  /** How long the loop polls at the short {@link #POLL_MILLIS}. */
  static final long SETTLE_NANOS = 1_000_000_000L;

  /**
   * Longest wait, and housekeeping pace, once {@link #IDLE_POLLS} polls in a row read nothing
   * (a sampler that says so): a target that sleeps costs the host two wake-ups a second instead
   * of ten; the first record read brings the loop back to its pace (docs/benchmarks.md, "The
   * agent and record's fixed cost").
   */
  static final int IDLE_POLL_MILLIS = 500;
  static final int IDLE_POLLS = 5;

  /** What a sampler does in the loop. */
  interface Body {
    /**
     * Reads what the kernel wrote, waiting up to {@code timeoutMillis} for it; false when there
     * was nothing, which lets the loop slow down for an idle target.
     */
    boolean poll(int timeoutMillis) throws SyscallException;

    /** After every poll. */
    default void afterPoll(long nowNanos) {}

    /** Every {@code housekeepingNanos}, after the target's exit was checked. */
    void housekeeping() throws SyscallException;
  }

  /** How the loop ended. */
  record Ended(boolean byUser, boolean targetGone) {}

  private PollLoop() {}

  static Ended run(SamplingOptions options, long housekeepingNanos, BooleanSupplier stop,
      TargetExit exit, Body body) throws SyscallException {
    long start = System.nanoTime();
    long end = options.durationNanos() == 0 ? Long.MAX_VALUE : start + options.durationNanos();
    long nextHousekeeping = start + housekeepingNanos;
    int emptyPolls = 0;
    while (true) {
      if (stop.getAsBoolean()) {
        return new Ended(true, false);
      }
      long now = System.nanoTime();
      if (now >= end) {
        return new Ended(false, false);
      }
      boolean idle = emptyPolls >= IDLE_POLLS;
      int wait = now - start < SETTLE_NANOS ? POLL_MILLIS
          : idle ? IDLE_POLL_MILLIS : SETTLED_POLL_MILLIS;
      // Never past the next housekeeping (exit check, new threads) nor the duration's end.
      long until = Math.min(end, nextHousekeeping);
      boolean read = body.poll((int) Math.max(0, Math.min(wait,
          (until - now + 999_999) / 1_000_000)));
      emptyPolls = read ? 0 : Math.min(emptyPolls + 1, IDLE_POLLS);
      now = System.nanoTime();
      body.afterPoll(now);
      if (now >= nextHousekeeping) {
        nextHousekeeping = now + (emptyPolls >= IDLE_POLLS
            ? Math.max(housekeepingNanos, IDLE_POLL_MILLIS * 1_000_000L) : housekeepingNanos);
        if (exit.gone()) {
          return new Ended(false, true);
        }
        body.housekeeping();
        // Asked again before the next read: threads housekeeping found after an unnoticed exit
        // would be another process's, under a reused pid; their records are never read.
        if (exit.gone()) {
          return new Ended(false, true);
        }
      }
    }
  }

  /**
   * Re-reads the target's memory map on the sampling thread, at most every {@link
   * #INTERVAL_NANOS}: a PC in no known module may be JIT code no refresh explains yet, and the
   * rings hold only so much while the reader is busy.
   */
  static final class SyncRefresh {
    static final long INTERVAL_NANOS = 200_000_000L;

    private final TargetProcess target;
    private long last = System.nanoTime() - INTERVAL_NANOS;

    SyncRefresh(TargetProcess target) {
      this.target = target;
    }

    /** True if the map was read again now; false if too soon or the process is going away. */
    boolean now() {
      long now = System.nanoTime();
      if (now - last < INTERVAL_NANOS) {
        return false;
      }
      last = now;
      try {
        target.refresh();
        return true;
      } catch (ProcReadException e) {
        return false;
      }
    }

    /** Reads the map again whenever it was last read. */
    boolean force() {
      last = System.nanoTime() - INTERVAL_NANOS;
      return now();
    }
  }
}
