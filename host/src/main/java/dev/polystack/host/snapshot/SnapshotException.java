package dev.polystack.host.snapshot;

/** A snapshot cannot be written, read or replayed; the message is one line for the user. */
public final class SnapshotException extends Exception {
  public SnapshotException(String message) {
    super(message);
  }

  public SnapshotException(String message, Throwable cause) {
    super(message, cause);
  }
}
