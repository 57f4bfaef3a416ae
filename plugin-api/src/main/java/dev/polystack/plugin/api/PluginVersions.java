package dev.polystack.plugin.api;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * Reads a plug-in's own version from a {@code plugin.properties} resource next to its class, so
 * the descriptor reports what the build stamped instead of a hand-kept constant.
 *
 * @since 1.0
 */
public final class PluginVersions {
  private PluginVersions() {}

  /** The {@code version} key of {@code plugin.properties} beside {@code anchor}, or "unknown". */
  public static String of(Class<?> anchor) {
    try (InputStream in = anchor.getResourceAsStream("plugin.properties")) {
      if (in == null) {
        return "unknown";
      }
      Properties p = new Properties();
      p.load(in);
      String v = p.getProperty("version", "").strip();
      return v.isEmpty() || v.startsWith("${") ? "unknown" : v;
    } catch (IOException | IllegalArgumentException e) {
      return "unknown";
    }
  }
}
