package dev.polystack.host.unwind;

import java.util.List;

/**
 * Native frames, leaf first, and why the walk stopped early ({@code null} when it reached the
 * outermost frame, whose return address the CFI marks undefined).
 */
public record UnwindResult(List<NativeFrame> frames, String errorReason) {
  public UnwindResult {
    frames = List.copyOf(frames);
  }

  public boolean complete() {
    return errorReason == null;
  }
}
