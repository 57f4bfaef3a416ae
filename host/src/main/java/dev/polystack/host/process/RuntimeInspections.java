package dev.polystack.host.process;

import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.plugin.api.Inspection;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Each runtime plug-in's answer for each distinct binary, by file identity (device, inode, path
 * as the process maps it), shared by the processes one pipeline describes: {@code RuntimePlugin}
 * promises its plug-ins one inspection per binary, and a host-wide agent sees the same libc in
 * every new process (docs/benchmarks.md, "The agent"). Bounded, least recently used first out.
 */
public final class RuntimeInspections {
  /** Distinct binaries remembered by a pipeline. */
  public static final int CAPACITY = 512;

  private final Map<MappedFile.Identity, Map<String, Optional<Inspection>>> answers;

  public RuntimeInspections(int capacity) {
    this.answers = BoundedMap.leastRecentlyUsed(capacity);
  }

  /** Plug-in {@code pluginId}'s answer for {@code file}: remembered, or {@code inspect}'s. */
  synchronized Optional<Inspection> of(MappedFile file, String pluginId,
      Supplier<Optional<Inspection>> inspect) {
    Map<String, Optional<Inspection>> byPlugin = answers.computeIfAbsent(
        file.identity(), k -> new HashMap<>());
    Optional<Inspection> known = byPlugin.get(pluginId);
    if (known == null) {
      known = inspect.get();
      byPlugin.put(pluginId, known);
    }
    return known;
  }
}
