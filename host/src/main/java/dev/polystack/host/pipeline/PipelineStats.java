package dev.polystack.host.pipeline;

import java.util.Map;

/**
 * The pipeline's figures so far, cumulative.
 *
 * @param losses samples lost by reason (the kernel's, the walk's, the pipeline's bounds)
 * @param errors stacks ending in an error frame, by reason
 * @param figures what the capture did besides (kernel ticks and records, events, plans)
 * @param runLosses the part of {@code losses} that is the run's, not one process's: the
 *     kernel's and the pipeline's own
 */
public record PipelineStats(long samples, int processesTracked, long processesSeen,
    Map<String, Long> losses, Map<String, Long> errors, Map<String, Long> figures,
    Map<String, Long> runLosses) {
  public PipelineStats {
    losses = Map.copyOf(losses);
    errors = Map.copyOf(errors);
    figures = Map.copyOf(figures);
    runLosses = Map.copyOf(runLosses);
  }
}
