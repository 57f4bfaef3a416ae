package dev.polystack.host.cli;

/**
 * The exit-code contract: 0 success, 1 failure at run time, 2 bad usage; {@code record -- CMD}
 * passes on the command's own failure instead of 0 (RecordCommand#launchedExitCode).
 */
final class ExitCodes {
  static final int OK = 0;
  static final int FAILURE = 1;
  static final int USAGE = 2;

  private ExitCodes() {}
}
