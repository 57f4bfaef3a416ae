package dev.polystack.plugin.api.kit;

/**
 * A fault the kit injects into one replay: the {@code index}-th read (0-based, in the order the
 * plug-in makes them through one memory) fails, or returns only {@code keep} bytes.
 *
 * @param index which read
 * @param keep -1 to fail the read, else how many bytes it returns (at least 1: a read that
 *     returns nothing is a failure by the {@code RemoteMemory} contract)
 */
public record ReadFault(int index, int keep) {
  public ReadFault {
    if (index < 0) {
      throw new IllegalArgumentException("read index must be >= 0");
    }
    if (keep == 0 || keep < -1) {
      throw new IllegalArgumentException("keep must be -1 (fail) or >= 1 (truncate)");
    }
  }

  static ReadFault fail(int index) {
    return new ReadFault(index, -1);
  }

  static ReadFault truncate(int index, int keep) {
    return new ReadFault(index, keep);
  }

  boolean fails() {
    return keep < 0;
  }

  @Override
  public String toString() {
    return fails() ? "read #" + index + " fails" : "read #" + index + " truncated to " + keep
        + " byte(s)";
  }
}
