package dev.polystack.host.cli;

import picocli.CommandLine.Option;

/**
 * The options of the commands that stop every thread of a process once (dump, snapshot): which
 * process and how deep to walk, validated the same way for both.
 */
final class StoppedTarget {

  @Option(names = {"--pid", "-p"}, paramLabel = "PID", required = true, description = "The process.")
  int pid;

  @Option(names = "--max-depth", paramLabel = "N", defaultValue = "512",
      description = "Frames per stack (default: ${DEFAULT-VALUE}).")
  int maxDepth;

  /** Rejects a pid or depth that cannot be right, as a usage error. */
  void validate() {
    if (pid <= 0) {
      throw new UsageException("--pid " + pid + ": a process id is a positive number");
    }
    if (maxDepth < 1 || maxDepth > 65_536) {
      throw new UsageException("--max-depth must be 1..65536, got " + maxDepth);
    }
  }
}
