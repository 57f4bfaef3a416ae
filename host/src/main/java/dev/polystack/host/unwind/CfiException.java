package dev.polystack.host.unwind;

/** CFI instructions or a DWARF expression could not be evaluated. */
final class CfiException extends Exception {
  private static final long serialVersionUID = 1L;

  private final UnwindError error;

  CfiException(UnwindError error, String detail) {
    // No stack trace: a reason for an error frame, thrown per frame where CFI is missing.
    super(error.reason() + ": " + detail, null, false, false);
    this.error = error;
  }

  /** Why: the error frame's reason and counter key. */
  UnwindError error() {
    return error;
  }
}
