package dev.polystack.host.memory;

/** A remote memory read that could not deliver the requested bytes. */
public final class RemoteReadException extends Exception {
  private static final long serialVersionUID = 1L;

  public enum Reason {
    /** Nothing (or not enough) is mapped/readable at the address. */
    UNREADABLE,
    /** The request exceeds the configured maximum read size. */
    TOO_LARGE,
    /** The underlying call failed for another reason (process gone, permission, ...). */
    SYSCALL
  }

  private final long address;
  private final int length;
  private final int bytesRead;
  private final Reason reason;

  public RemoteReadException(
      String message, long address, int length, int bytesRead, Reason reason, Throwable cause) {
    super(
        message + " (address 0x" + Long.toHexString(address) + ", length " + length
            + ", read " + bytesRead + ")",
        cause);
    this.address = address;
    this.length = length;
    this.bytesRead = bytesRead;
    this.reason = reason;
  }

  public long address() {
    return address;
  }

  public int length() {
    return length;
  }

  public int bytesRead() {
    return bytesRead;
  }

  public Reason reason() {
    return reason;
  }
}
