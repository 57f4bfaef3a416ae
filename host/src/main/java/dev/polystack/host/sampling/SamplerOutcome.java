package dev.polystack.host.sampling;

import dev.polystack.host.ptrace.WaitStatus;
import java.util.Map;

/**
 * How a sampling loop ended.
 *
 * @param exit the target's wait status if we could collect it (ptrace, or a child we launched)
 * @param stoppedByUser the user asked to stop
 * @param counters what the backend counted besides samples and losses (kernel capture figures)
 * @param targetGone the target exited, whether or not its status is known (in perf attach mode
 *     the target is not our child, so its exit code cannot be collected)
 */
public record SamplerOutcome(WaitStatus exit, boolean stoppedByUser, boolean targetGone,
    Map<String, Long> counters) {
  public SamplerOutcome {
    counters = Map.copyOf(counters);
  }

  public SamplerOutcome(WaitStatus exit, boolean stoppedByUser, boolean targetGone) {
    this(exit, stoppedByUser, targetGone, Map.of());
  }
}
