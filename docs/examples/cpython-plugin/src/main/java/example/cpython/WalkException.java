package example.cpython;

/** A walk stopped on target data that failed a check; {@link #reason} names the check. */
final class WalkException extends Exception {
  private static final long serialVersionUID = 1L;

  WalkException(String reason) {
    super(reason, null, false, false); // a counted outcome, not a bug: no stack trace
  }

  String reason() {
    return getMessage();
  }
}
