package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * Target memory a capture plan copied at the tick: {@code length} bytes from {@code address}
 * (fewer than the step asked for when a page was unreadable or the record was full). Reads of
 * {@link ThreadContext#memory()} inside it are served from the copy.
 *
 * @param step index of the {@code Copy} or {@code Chain} step that copied it
 * @param label the step's label
 * @since 1.6
 */
public record CapturedRegion(long address, int length, int step, String label) {
  public CapturedRegion {
    Objects.requireNonNull(label, "label");
    if (length < 0 || step < 0) {
      throw new IllegalArgumentException("length and step are >= 0: " + length + ", " + step);
    }
  }

  public boolean contains(long a) {
    return Long.compareUnsigned(a - address, length) < 0;
  }
}
