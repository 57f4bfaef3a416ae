package dev.polystack.host.sampling;

/** Receives captured samples from a sampling loop; must not block. */
interface SampleSink {
  void accept(ThreadSample sample);

  /** Counts a sample that could not be taken, by reason. */
  void lost(String reason);
}
