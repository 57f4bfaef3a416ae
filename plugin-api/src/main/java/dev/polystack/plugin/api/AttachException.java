package dev.polystack.plugin.api;

/**
 * A plug-in cannot attach to a process; the message says which check failed.
 *
 * @since 1.0
 */
public final class AttachException extends Exception {
  private static final long serialVersionUID = 1L;

  public AttachException(String message) {
    super(message);
  }

  public AttachException(String message, Throwable cause) {
    super(message, cause);
  }
}
