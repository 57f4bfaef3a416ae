package dev.polystack.plugin.api;

/**
 * A polystack plug-in, found by the host through {@link java.util.ServiceLoader} under this
 * interface. Implementations need a public no-argument constructor, must not make system calls
 * (everything about a target comes through host services) and must not keep global state.
 *
 * <p>A plug-in is either a {@link RuntimePlugin} (walks and names a runtime's frames) or a
 * {@link ProbePlugin} (plans probes and decodes their hits), or both.
 *
 * @since 1.0
 */
public interface Plugin {

  /** Identity, API version and capabilities; called once at load time. */
  PluginDescriptor descriptor();
}
