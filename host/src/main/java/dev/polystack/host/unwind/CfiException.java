package dev.polystack.host.unwind;

/** CFI instructions or a DWARF expression could not be evaluated; the reason is a short token. */
final class CfiException extends Exception {
  private static final long serialVersionUID = 1L;

  private final String reason;

  CfiException(String reason, String detail) {
    // No stack trace: a reason for an error frame, thrown per frame where CFI is missing.
    super(reason + ": " + detail, null, false, false);
    this.reason = reason;
  }

  /** Short, stable token used as the error-frame name and counter key. */
  String reason() {
    return reason;
  }
}
