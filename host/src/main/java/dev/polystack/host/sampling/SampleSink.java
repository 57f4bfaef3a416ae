package dev.polystack.host.sampling;

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
}
