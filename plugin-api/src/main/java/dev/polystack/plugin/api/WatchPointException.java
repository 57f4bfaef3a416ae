package dev.polystack.plugin.api;

/**
 * A site in this runtime's syntax that names nothing to watch in the process (no such function,
 * several, the runtime's state unreadable). The message is the user's one line: what, why, and
 * what to do; the host prints it and exits 2.
 *
 * @since 1.7
 */
public final class WatchPointException extends Exception {
  private static final long serialVersionUID = 1L;

  public WatchPointException(String message) {
    super(message, null, false, false);
  }
}
