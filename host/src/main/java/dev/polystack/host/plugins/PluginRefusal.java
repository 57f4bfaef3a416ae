package dev.polystack.host.plugins;

import java.util.Objects;

/** A plug-in the host did not load, with a one-line reason that says what to do. */
public record PluginRefusal(String source, String reason) {
  public PluginRefusal {
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(reason, "reason");
  }

  @Override
  public String toString() {
    return source + ": " + reason;
  }
}
