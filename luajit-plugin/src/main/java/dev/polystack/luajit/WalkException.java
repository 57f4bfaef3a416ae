package dev.polystack.luajit;

/** A walk stopped on bad or unreadable target data; {@code reason} is a short stable token. */
final class WalkException extends Exception {
  private static final long serialVersionUID = 1L;

  private final String reason;

  WalkException(String reason, String detail) {
    super(reason + ": " + detail, null, false, false);
    this.reason = reason;
  }

  String reason() {
    return reason;
  }
}
