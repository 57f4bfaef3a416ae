package dev.polystack.host.pipeline;

import java.util.Map;

/**
 * One process's figures since it was described.
 *
 * @param exited its exit (or exec into another program) was seen
 */
public record ProcessFigures(long samples, long periods, int threads,
    Map<String, Long> errors, Map<String, Long> losses, boolean exited) {
  public ProcessFigures {
    errors = Map.copyOf(errors);
    losses = Map.copyOf(losses);
  }
}
