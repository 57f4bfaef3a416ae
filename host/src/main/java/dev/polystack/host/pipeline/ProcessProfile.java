package dev.polystack.host.pipeline;

import dev.polystack.otel.model.Recording;
import java.util.Map;

/**
 * One process's samples of one interval, the resource they belong to, and its figures so far.
 *
 * @param serial which description of the process this is: the same over intervals, a new one
 *     after an exec (same pid, another program)
 */
public record ProcessProfile(Recording recording, Map<String, Object> resource,
    ProcessFigures figures, long serial) {
  public ProcessProfile {
    resource = Map.copyOf(resource);
  }

  public ProcessProfile(Recording recording, Map<String, Object> resource,
      ProcessFigures figures) {
    this(recording, resource, figures, 0);
  }
}
