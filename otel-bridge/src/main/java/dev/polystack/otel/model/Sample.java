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
 */
public record Sample(
    int tid, String threadName, long epochNanos, StackTrace stack, Map<String, String> attributes) {
  public Sample {
    Objects.requireNonNull(threadName, "threadName");
    Objects.requireNonNull(stack, "stack");
    attributes = Map.copyOf(attributes);
  }
}
