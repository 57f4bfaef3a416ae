package dev.polystack.host.cli;

/** A command could not do its job for a reason outside the command line; exit code 1. */
final class CommandFailedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  CommandFailedException(String message) {
    super(message);
  }

  CommandFailedException(String message, Throwable cause) {
    super(message, cause);
  }
}
