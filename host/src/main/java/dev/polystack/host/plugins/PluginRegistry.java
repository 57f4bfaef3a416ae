package dev.polystack.host.plugins;

import dev.polystack.plugin.api.ProbePlugin;
import dev.polystack.plugin.api.RuntimePlugin;
import java.util.List;
import java.util.Optional;

/**
 * The plug-ins one host run loaded, in a stable order (by id), the ones it refused, and
 * warnings about what was loaded (third-party code in a privileged process), one line each.
 */
public record PluginRegistry(
    List<LoadedPlugin> plugins, List<PluginRefusal> refusals, List<String> warnings) {
  public PluginRegistry {
    plugins = List.copyOf(plugins);
    refusals = List.copyOf(refusals);
    warnings = List.copyOf(warnings);
  }

  public PluginRegistry(List<LoadedPlugin> plugins, List<PluginRefusal> refusals) {
    this(plugins, refusals, List.of());
  }

  public Optional<LoadedPlugin> byId(String id) {
    return plugins.stream().filter(p -> p.id().equals(id)).findFirst();
  }

  public List<LoadedPlugin> runtimePlugins() {
    return plugins.stream().filter(LoadedPlugin::isRuntime).toList();
  }

  public List<LoadedPlugin> probePlugins() {
    return plugins.stream().filter(LoadedPlugin::isProbe).toList();
  }

  static RuntimePlugin asRuntime(LoadedPlugin p) {
    return (RuntimePlugin) p.plugin();
  }

  static ProbePlugin asProbe(LoadedPlugin p) {
    return (ProbePlugin) p.plugin();
  }
}
