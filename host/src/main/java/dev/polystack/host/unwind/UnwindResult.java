package dev.polystack.host.unwind;

import java.util.List;

/**
 * Native frames, leaf first, and why the walk stopped early ({@code null} when it reached the
 * outermost frame, whose return address the CFI marks undefined).
 */
public record UnwindResult(List<NativeFrame> frames, UnwindError error) {
  public UnwindResult {
    frames = List.copyOf(frames);
  }

  public boolean complete() {
    return error == null;
  }

  /** The external name of {@link #error} (see {@link UnwindError#reason}), or null. */
  public String errorReason() {
    return error == null ? null : error.reason();
  }
}
