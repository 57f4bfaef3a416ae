package dev.polystack.host.sampling;

import java.util.List;

/**
 * A captured stack, leaf first, and the reasons of every error frame in it (for counters).
 */
record RawStack(List<RawFrame> frames, List<String> errors) {
  RawStack {
    frames = List.copyOf(frames);
    errors = List.copyOf(errors);
  }
}
