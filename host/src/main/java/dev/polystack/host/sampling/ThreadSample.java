package dev.polystack.host.sampling;

/**
 * What the sampling loop hands to the processing stage for one thread and one tick.
 *
 * @param epochNanos wall-clock time of the capture
 * @param pauseNanos how long the thread was kept stopped (0 in perf mode)
 * @param periods the sampling periods the sample stands for: 1 plus the thread's ticks before
 *     it that were not taken or not kept (see {@link dev.polystack.otel.model.Sample#periods})
 */
public record ThreadSample(int tid, long epochNanos, RawStack stack, long pauseNanos, int periods) {
  public ThreadSample {
    if (periods < 1) {
      throw new IllegalArgumentException("a sample stands for at least one period: " + periods);
    }
  }
}
