package dev.polystack.otel.model;

import dev.polystack.plugin.api.Frame;
import java.util.List;

/**
 * The frames of one sample, leaf first. The aggregator interns equal stacks, so a recording
 * holds each distinct stack once however often it was sampled.
 */
public record StackTrace(List<Frame> frames) {
  public StackTrace {
    frames = List.copyOf(frames);
  }

  public Frame leaf() {
    return frames.isEmpty() ? null : frames.get(0);
  }
}
