package dev.polystack.host.plugins;

/** A --plugin-path entry is unusable (missing, not a directory, unreadable). */
public final class PluginPathException extends Exception {
  private static final long serialVersionUID = 1L;

  public PluginPathException(String message) {
    super(message);
  }
}
