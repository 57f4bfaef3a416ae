package dev.polystack.host.plugins;

import dev.polystack.plugin.api.Plugin;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.ProbePlugin;
import dev.polystack.plugin.api.RuntimePlugin;
import java.util.Objects;

/**
 * A plug-in the host accepted, with the descriptor it returned at load time (read once, so a
 * plug-in cannot change its identity later).
 *
 * @param source {@code class path} or the jar it came from
 */
public record LoadedPlugin(Plugin plugin, PluginDescriptor descriptor, String source) {
  public LoadedPlugin {
    Objects.requireNonNull(plugin, "plugin");
    Objects.requireNonNull(descriptor, "descriptor");
    Objects.requireNonNull(source, "source");
  }

  public String id() {
    return descriptor.id();
  }

  public boolean isRuntime() {
    return plugin instanceof RuntimePlugin;
  }

  public boolean isProbe() {
    return plugin instanceof ProbePlugin;
  }

  /** {@code runtime}, {@code probe} or {@code runtime+probe}. */
  public String kind() {
    if (isRuntime() && isProbe()) {
      return "runtime+probe";
    }
    return isRuntime() ? "runtime" : isProbe() ? "probe" : "none";
  }
}
