package dev.polystack.host.probes;

import java.util.function.BooleanSupplier;

/**
 * Arms a resolved plan's hardware breakpoints in every thread of a process and delivers hits
 * until {@code stop} says so, the deadline passes or the process is gone. Whatever happens, the
 * target is left running and unarmed.
 */
public interface ProbeBackend {

  /** Why the run ended. */
  enum End {
    STOPPED,
    DEADLINE,
    TARGET_EXITED
  }

  /**
   * @param deadlineNanos System.nanoTime() to end at, or Long.MAX_VALUE
   */
  End run(ResolvedPlan plan, HitListener listener, BooleanSupplier stop, long deadlineNanos)
      throws ProbeException;
}
