package dev.polystack.host.session;

import dev.polystack.otel.model.Recording;
import java.util.Map;

/**
 * Receives a record run's samples while it goes on, one export interval at a time (the OTLP
 * exporter streams them). Called on the run's helper thread, and once more at the end with what
 * remains; it must not block, or module refreshes and the status line would stall.
 */
public interface IntervalListener {

  /**
   * Cumulative figures of the run so far.
   *
   * @param samples samples processed
   * @param losses samples not taken or dropped, by reason
   * @param errors stacks ending in an error frame, by reason
   */
  record Totals(long samples, Map<String, Long> losses, Map<String, Long> errors) {
    public Totals {
      losses = Map.copyOf(losses);
      errors = Map.copyOf(errors);
    }
  }

  /**
   * @param interval the samples processed since the last call, with the modules known now;
   *     its start and end are the interval's
   * @param totals the run's figures so far
   * @param last true for the final call after sampling stopped
   */
  void interval(Recording interval, Totals totals, boolean last);
}
