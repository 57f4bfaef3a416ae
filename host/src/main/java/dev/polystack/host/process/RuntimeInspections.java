package dev.polystack.host.process;

import dev.polystack.host.proc.DeviceNumber;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.plugin.api.Inspection;
import java.util.HashMap;
import java.util.LinkedHashMap;
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

  private record Key(DeviceNumber device, long inode, String path) {}

  private final Map<Key, Map<String, Optional<Inspection>>> answers;

  public RuntimeInspections(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be positive: " + capacity);
    }
    this.answers = new LinkedHashMap<>(64, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Key, Map<String, Optional<Inspection>>> e) {
        return size() > capacity;
      }
    };
  }

  /** Plug-in {@code pluginId}'s answer for {@code file}: remembered, or {@code inspect}'s. */
  synchronized Optional<Inspection> of(MappedFile file, String pluginId,
      Supplier<Optional<Inspection>> inspect) {
    Map<String, Optional<Inspection>> byPlugin = answers.computeIfAbsent(
        new Key(file.device(), file.inode(), file.path()), k -> new HashMap<>());
    Optional<Inspection> known = byPlugin.get(pluginId);
    if (known == null) {
      known = inspect.get();
      byPlugin.put(pluginId, known);
    }
    return known;
  }
}
