package dev.polystack.host.embed;

import java.util.Map;

/**
 * A session's figures, cumulative since it started, as {@code polystack agent --stats-json}
 * reports them (docs/operations.md, "The host-wide agent"). Every interval cut is delivered,
 * dropped, or still queued.
 *
 * @param samples samples walked and handed to intervals
 * @param processesTracked processes described now
 * @param processesSeen processes described since the start
 * @param losses what was lost, by reason ({@code bpf_ring_full}, {@code interval_full},
 *     {@code process_evicted}, ...; a plug-in's own notes as {@code pluginId.reason})
 * @param errors stacks that end in an error frame, by reason
 * @param figures what the capture did besides (kernel ticks and records, process events)
 * @param pluginFailures plug-in calls that threw, by {@code pluginId.operation}
 * @param intervalsDelivered intervals the listener returned from (normally or by throwing)
 * @param intervalsDropped intervals not delivered: the listener queue was full, or stop's
 *     timeout passed first
 * @param samplesDropped samples in the dropped intervals
 * @param listenerFailures intervals the listener threw on
 */
public record ProfilerStats(long samples, int processesTracked, long processesSeen,
    Map<String, Long> losses, Map<String, Long> errors, Map<String, Long> figures,
    Map<String, Long> pluginFailures, long intervalsDelivered, long intervalsDropped,
    long samplesDropped, long listenerFailures) {
  /** Copies the maps. */
  public ProfilerStats {
    losses = Map.copyOf(losses);
    errors = Map.copyOf(errors);
    figures = Map.copyOf(figures);
    pluginFailures = Map.copyOf(pluginFailures);
  }
}
