package dev.polystack.host.plugins;

import dev.polystack.plugin.api.SampleType;
import java.util.List;

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
 * @param sampleTypes what a runtime plug-in's walks measure per sample, as declared at load
 */
public record LoadedPlugin(Plugin plugin, PluginDescriptor descriptor, String source,
    List<SampleType> sampleTypes) {
  public LoadedPlugin {
    Objects.requireNonNull(plugin, "plugin");
    Objects.requireNonNull(descriptor, "descriptor");
    Objects.requireNonNull(source, "source");
    sampleTypes = List.copyOf(sampleTypes);
  }

  /** A plug-in that declares no sample types. */
  public LoadedPlugin(Plugin plugin, PluginDescriptor descriptor, String source) {
    this(plugin, descriptor, source, List.of());
  }

  /** Its declared sample type named {@code name}, or null when it declared none such. */
  public SampleType sampleType(String name) {
    for (SampleType t : sampleTypes) {
      if (t.name().equals(name)) {
        return t;
      }
    }
    return null;
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
