package dev.polystack.host.process;

import dev.polystack.host.plugins.LoadedPlugin;
import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.RuntimeInstance;
import java.util.List;
import java.util.Objects;

/**
 * A plug-in instance attached to the target, with the code it owns in runtime addresses: native
 * frames whose PC lies in {@code ranges} are handed to {@code instance} to walk.
 */
public record RuntimeBinding(
    LoadedPlugin plugin, RuntimeInstance instance, String module, List<CodeRange> ranges) {
  public RuntimeBinding {
    Objects.requireNonNull(plugin, "plugin");
    Objects.requireNonNull(instance, "instance");
    Objects.requireNonNull(module, "module");
    ranges = List.copyOf(ranges);
  }

  /** Indexed: asked for every native frame of every sample, and an iterator is an allocation. */
  public boolean owns(long pc) {
    for (int i = 0; i < ranges.size(); i++) {
      if (ranges.get(i).contains(pc)) {
        return true;
      }
    }
    return false;
  }
}
