package dev.polystack.otel.model;

import java.util.Map;
import java.util.Objects;

/**
 * One sample of one thread.
 *
 * @param tid the thread id
 * @param threadName the thread's name when it was sampled
 * @param epochNanos wall-clock time of the sample, nanoseconds since the Unix epoch
 * @param stack the stack, leaf first
 * @param attributes per-sample facts such as the LuaJIT vmstate or trace number
 * @param periods the sampling periods this sample stands for: 1, or more when ticks of this
 *     thread before it were not taken (the sampler fell behind, or a walk could not be kept).
 *     Their time is carried by the next sample, as perf's sample period carries it, so a slow
 *     start-up or a busy host does not take time away from what the target ran meanwhile.
 */
public record Sample(int tid, String threadName, long epochNanos, StackTrace stack,
    Map<String, String> attributes, int periods) {
  public Sample {
    Objects.requireNonNull(threadName, "threadName");
    Objects.requireNonNull(stack, "stack");
    attributes = Map.copyOf(attributes);
    if (periods < 1) {
      throw new IllegalArgumentException("a sample stands for at least one period: " + periods);
    }
  }

  /** A sample that stands for one period. */
  public Sample(int tid, String threadName, long epochNanos, StackTrace stack,
      Map<String, String> attributes) {
    this(tid, threadName, epochNanos, stack, attributes, 1);
  }
}
