package dev.polystack.host.cli;

import dev.polystack.host.output.OutputException;

/** Turns an output that cannot be written into the command's one line and exit code. */
final class OutputErrors {
  private OutputErrors() {}

  /** Exit 2 when another path must be given, 1 when the system refused. */
  static RuntimeException toCli(OutputException e) {
    return e.usage() ? new UsageException(e.getMessage())
        : new CommandFailedException(e.getMessage(), e);
  }
}
