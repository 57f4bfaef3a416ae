package dev.polystack.plugin.api;

/**
 * A read of target memory failed; the address is where the read started.
 *
 * @since 1.0
 */
public final class MemoryReadException extends Exception {
  private static final long serialVersionUID = 1L;

  private final long address;
  private final int length;

  public MemoryReadException(long address, int length, String reason) {
    super("cannot read " + length + " bytes at 0x" + Long.toHexString(address) + ": " + reason);
    this.address = address;
    this.length = length;
  }

  public long address() {
    return address;
  }

  public int length() {
    return length;
  }
}
