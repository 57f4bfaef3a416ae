package dev.polystack.plugin.api;

/**
 * A module image is malformed or a requested part of it cannot be read.
 *
 * @since 1.0
 */
public final class ImageReadException extends Exception {
  private static final long serialVersionUID = 1L;

  public ImageReadException(String message) {
    super(message);
  }

  public ImageReadException(String message, Throwable cause) {
    super(message, cause);
  }
}
