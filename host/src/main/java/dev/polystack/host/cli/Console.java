package dev.polystack.host.cli;

import java.io.PrintWriter;
import java.util.Objects;

/** The user's terminal: results on stdout, one-line diagnostics on stderr. */
public final class Console {
  static final String PREFIX = "polystack: ";

  private final PrintWriter out;
  private final PrintWriter err;

  public Console(PrintWriter out, PrintWriter err) {
    this.out = Objects.requireNonNull(out, "out");
    this.err = Objects.requireNonNull(err, "err");
  }

  public PrintWriter out() {
    return out;
  }

  public PrintWriter err() {
    return err;
  }

  /** One diagnostic line; newlines in the message are folded so it stays one line. */
  public void error(String message) {
    err.println(PREFIX + fold(message));
    err.flush();
  }

  public void warn(String message) {
    err.println(PREFIX + "warning: " + fold(message));
    err.flush();
  }

  static String fold(String message) {
    return message == null ? "" : message.replace("\r", " ").replace('\n', ' ').strip();
  }
}
