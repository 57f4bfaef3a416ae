package dev.polystack.plugin.api;

import java.util.List;
import java.util.Objects;

/**
 * What one {@link CapturePlan} did at a sample's tick: whether it ran to its end, where and why
 * it stopped if not, and the regions it copied. A walk uses it to tell a value the plan copied
 * at the tick from one it would have to read live, and to know a check failed (a stale constant,
 * another thread's state) before it trusts what the plan left.
 *
 * @param plan the plan, as the instance returned it from {@link RuntimeInstance#capturePlan()}
 * @param stoppedAtStep index of the step that stopped the plan, -1 if it ran to its end
 * @param stop why it stopped; {@link Stop#NONE} if it ran to its end
 * @param regions what it copied, in step order; a copy that got nothing is left out
 * @since 1.6
 */
public record PlanOutcome(CapturePlan plan, int stoppedAtStep, Stop stop,
    List<CapturedRegion> regions) {

  /** Why a plan stopped before its end. */
  public enum Stop {
    /** It ran to its end. */
    NONE,
    /** A {@code Load} or {@code LoadIndexed} of an unreadable address. */
    LOAD,
    /** A {@code Check} that did not hold. */
    CHECK,
    /** A step the kernel's interpreter found malformed (a host bug: report it). */
    INVALID
  }

  public PlanOutcome {
    Objects.requireNonNull(plan, "plan");
    Objects.requireNonNull(stop, "stop");
    regions = List.copyOf(regions);
    if ((stop == Stop.NONE) != (stoppedAtStep == -1)) {
      throw new IllegalArgumentException(
          "a plan stops at a step exactly when it has a reason: " + stop + " at " + stoppedAtStep);
    }
  }

  public boolean completed() {
    return stop == Stop.NONE;
  }
}
