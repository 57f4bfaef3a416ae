package dev.polystack.host.sampling;

/**
 * What the sampling loop hands to the processing stage for one thread and one tick.
 *
 * @param epochNanos wall-clock time of the capture
 * @param pauseNanos how long the thread was kept stopped (0 in perf mode)
 */
record ThreadSample(int tid, long epochNanos, RawStack stack, long pauseNanos) {}
