package dev.polystack.host.cli;

import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
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
  /** Warnings printed so far, by text, with how often each came; bounded. */
  private final Map<String, Integer> warned = new LinkedHashMap<>();
  private static final int MAX_DISTINCT_WARNINGS = 1000;

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

  /**
   * One warning line; the same text again is not printed but counted, and {@link
   * #reportRepeats} says how often it came, so a warning per sample or thread cannot flood.
   */
  public synchronized void warn(String message) {
    String text = fold(message);
    Integer seen = warned.get(text);
    if (seen != null) {
      warned.put(text, seen + 1);
      return;
    }
    if (warned.size() < MAX_DISTINCT_WARNINGS) {
      warned.put(text, 1);
    }
    line(PREFIX + "warning: " + text);
  }

  /** One line per warning that came more than once: how many more times. */
  synchronized void reportRepeats() {
    warned.forEach((text, n) -> {
      if (n > 1) {
        line(PREFIX + "warning: " + (n - 1) + " more time" + (n == 2 ? "" : "s") + ": "
            + (text.length() > 100 ? text.substring(0, 100) + "..." : text));
      }
    });
    warned.clear();
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

  /**
   * Writes terminal control sequences and laid-out text to stdout as they are: for the full
   * screen of {@code top} only. {@code text} is escaped but for newlines and tabs; the control
   * sequences are polystack's own, never from a target.
   */
  synchronized void screen(String control, String text) {
    rawOut.print(control + TerminalText.escapeKeepingLayout(text));
    rawOut.flush();
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
