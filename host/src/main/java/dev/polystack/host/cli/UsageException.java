package dev.polystack.host.cli;

/** The command line asks for something that cannot be; exit code 2. */
final class UsageException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  UsageException(String message) {
    super(message);
  }
}
