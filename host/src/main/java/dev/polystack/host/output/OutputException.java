package dev.polystack.host.output;

/**
 * An output cannot be written: a one-line message that names the file, the reason (the
 * operating system's words where it gave one) and what to do.
 */
public final class OutputException extends Exception {
  private static final long serialVersionUID = 1L;

  private final boolean usage;

  private OutputException(String message, boolean usage, Throwable cause) {
    super(message, cause);
    this.usage = usage;
  }

  /** The path given cannot be an output (a directory, a link, a missing directory): exit 2. */
  static OutputException usage(String message) {
    return new OutputException(message, true, null);
  }

  /** The path is acceptable but the system refused (permissions, read-only, full): exit 1. */
  static OutputException failure(String message, Throwable cause) {
    return new OutputException(message, false, cause);
  }

  /** Whether the command line must change (exit 2) rather than the system (exit 1). */
  public boolean usage() {
    return usage;
  }
}
