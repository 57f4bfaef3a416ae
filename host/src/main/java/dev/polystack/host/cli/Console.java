package dev.polystack.host.cli;

import java.io.PrintWriter;
import java.util.Objects;

/**
 * The user's terminal: results on stdout, one-line diagnostics on stderr. Everything printed
 * through {@link #out()} and {@link #err()} has its control characters escaped ({@link
 * TerminalText}), so no string from a target reaches the terminal raw.
 */
public final class Console {
  static final String PREFIX = "polystack: ";
  private static final String CLEAR_LINE = "\r\033[K";

  private final PrintWriter rawOut;
  private final PrintWriter rawErr;
  private final PrintWriter out;
  private final PrintWriter err;
  private boolean statusShown;

  public Console(PrintWriter out, PrintWriter err) {
    this.rawOut = Objects.requireNonNull(out, "out");
    this.rawErr = Objects.requireNonNull(err, "err");
    this.out = new PrintWriter(new TerminalWriter(out), true);
    this.err = new PrintWriter(new TerminalWriter(err), true);
  }

  public PrintWriter out() {
    return out;
  }

  public PrintWriter err() {
    return err;
  }

  /**
   * The streams without escaping, for picocli's help and version text only: they hold nothing
   * from a target, and picocli may colour them.
   */
  PrintWriter helpOut() {
    return rawOut;
  }

  PrintWriter helpErr() {
    return rawErr;
  }

  /** One diagnostic line; newlines in the message are folded so it stays one line. */
  public synchronized void error(String message) {
    line(PREFIX + fold(message));
  }

  public synchronized void warn(String message) {
    line(PREFIX + "warning: " + fold(message));
  }

  /** One line of information, not a problem (e.g. who a launched command runs as). */
  public synchronized void note(String message) {
    line(PREFIX + fold(message));
  }

  /** Draws {@code text} as the live status line in place of the previous one (a terminal). */
  synchronized void status(String text) {
    rawErr.print(CLEAR_LINE + TerminalText.escape(text));
    rawErr.flush();
    statusShown = true;
  }

  /** Removes the status line, if one is shown. */
  synchronized void clearStatus() {
    if (statusShown) {
      rawErr.print(CLEAR_LINE);
      rawErr.flush();
      statusShown = false;
    }
  }

  private void line(String text) {
    clearStatus(); // a diagnostic gets its own line; the next status update redraws
    err.println(text);
    err.flush();
  }

  static String fold(String message) {
    return message == null ? "" : message.replace("\r", " ").replace('\n', ' ').strip();
  }
}
