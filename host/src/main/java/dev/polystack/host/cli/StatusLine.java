package dev.polystack.host.cli;

import dev.polystack.host.sys.Native;

/**
 * A one-line live status on stderr, redrawn in place, only when stderr is a terminal: a log file
 * or a pipe gets the summary at the end and nothing else.
 */
final class StatusLine {
  private final Console console;
  private final boolean enabled;

  StatusLine(Console console) {
    this.console = console;
    this.enabled = isTerminal();
  }

  private static boolean isTerminal() {
    try {
      return Native.libc().isatty(2) == 1;
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  void update(long samples, long errors, long lost, double seconds) {
    if (!enabled) {
      return;
    }
    double rate = seconds > 0 ? samples / seconds : 0;
    console.status(String.format("polystack: %d samples (%.1f/s), %d errors, %d lost, %.0f s",
        samples, rate, errors, lost, seconds));
  }

  void clear() {
    console.clearStatus();
  }
}
