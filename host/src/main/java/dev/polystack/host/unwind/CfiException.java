package dev.polystack.host.unwind;

/** CFI instructions or a DWARF expression could not be evaluated; the reason is a short token. */
final class CfiException extends Exception {
  private static final long serialVersionUID = 1L;

  private final String reason;

  CfiException(String reason, String detail) {
    super(reason + ": " + detail);
    this.reason = reason;
  }

  /** Short, stable token used as the error-frame name and counter key. */
  String reason() {
    return reason;
  }
}
