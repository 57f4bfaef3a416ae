package dev.polystack.host.sampling;

import dev.polystack.otel.counters.Counter;

/** Receives captured samples from a sampling loop; must not block. */
public interface SampleSink {
  void accept(ThreadSample sample);

  /** Counts a sample that could not be taken, by reason. */
  void lost(String reason);

  /** Counts {@code count} samples lost for one reason at once (e.g. a PERF_RECORD_LOST). */
  default void lost(String reason, long count) {
    for (long i = 0; i < count; i++) {
      lost(reason);
    }
  }

  /** Counts a sample that could not be taken, for a declared reason ({@code HostCounters}). */
  default void lost(Counter reason) {
    lost(reason.name());
  }

  /** Counts {@code count} samples lost for one declared reason at once. */
  default void lost(Counter reason, long count) {
    lost(reason.name(), count);
  }
}
