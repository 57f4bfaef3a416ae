package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * A half-open address range {@code [start, end)} of code, with what it is.
 *
 * @since 1.0
 */
public record CodeRange(long start, long end, String label) {
  public CodeRange {
    Objects.requireNonNull(label, "label");
    if (Long.compareUnsigned(start, end) >= 0) {
      throw new IllegalArgumentException(
          "empty or inverted code range 0x" + Long.toHexString(start) + "-0x"
              + Long.toHexString(end));
    }
  }

  public boolean contains(long address) {
    return Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0;
  }

  public long size() {
    return end - start;
  }

  public CodeRange shift(long bias) {
    return new CodeRange(start + bias, end + bias, label);
  }
}
