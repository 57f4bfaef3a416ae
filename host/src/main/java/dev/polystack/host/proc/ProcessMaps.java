package dev.polystack.host.proc;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/** An immutable snapshot of a process's memory mappings, sorted by address, non-overlapping. */
public final class ProcessMaps {
  private final List<MemoryMapping> mappings;
  // Start addresses in a primitive array so lookups do not box on the sampling hot path.
  private final long[] starts;
  // Grouped once: snapshots are immutable and module lookups are frequent during symbolization.
  private final Map<ModuleKey, MappedFile> modulesByKey;
  private final List<MappedFile> modules;

  private ProcessMaps(List<MemoryMapping> mappings) {
    this.mappings = List.copyOf(mappings);
    this.starts = new long[this.mappings.size()];
    MemoryMapping previous = null;
    for (int i = 0; i < starts.length; i++) {
      MemoryMapping m = this.mappings.get(i);
      if (previous != null && Long.compareUnsigned(previous.end(), m.start()) > 0) {
        throw new IllegalArgumentException(
            "mappings must be sorted and non-overlapping: " + previous + " then " + m);
      }
      starts[i] = m.start();
      previous = m;
    }
    this.modulesByKey = groupModules(this.mappings);
    this.modules = List.copyOf(modulesByKey.values());
  }

  /**
   * Creates a snapshot from mappings that are already sorted by address and do not overlap.
   *
   * @throws IllegalArgumentException if they are not
   */
  public static ProcessMaps of(List<MemoryMapping> mappings) {
    return new ProcessMaps(Objects.requireNonNull(mappings, "mappings"));
  }

  public List<MemoryMapping> mappings() {
    return mappings;
  }

  public int size() {
    return mappings.size();
  }

  /** The mapping containing {@code address} (unsigned), found by binary search. */
  public Optional<MemoryMapping> find(long address) {
    int low = 0;
    int high = starts.length - 1;
    int candidate = -1;
    while (low <= high) {
      int mid = (low + high) >>> 1;
      if (Long.compareUnsigned(starts[mid], address) <= 0) {
        candidate = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    if (candidate < 0) {
      return Optional.empty();
    }
    MemoryMapping m = mappings.get(candidate);
    return m.contains(address) ? Optional.of(m) : Optional.empty();
  }

  public List<MemoryMapping> executableMappings() {
    return mappings.stream().filter(MemoryMapping::isExecutable).toList();
  }

  /** The first mapping of the given kind, e.g. {@link MappingKind#VDSO}. */
  public Optional<MemoryMapping> first(MappingKind kind) {
    return mappings.stream().filter(m -> m.kind() == kind).findFirst();
  }

  /** File-backed mappings grouped by file, ordered by each file's lowest address. */
  public List<MappedFile> modules() {
    return modules;
  }

  /** The module whose mappings include {@code address}, if that address is file-backed. */
  public Optional<MappedFile> findModule(long address) {
    return find(address)
        .filter(MemoryMapping::isFileBacked)
        .map(m -> modulesByKey.get(new ModuleKey(m.path(), m.device(), m.inode())));
  }

  private static Map<ModuleKey, MappedFile> groupModules(List<MemoryMapping> mappings) {
    Map<ModuleKey, List<MemoryMapping>> groups = new LinkedHashMap<>();
    for (MemoryMapping m : mappings) {
      if (m.isFileBacked()) {
        groups
            .computeIfAbsent(new ModuleKey(m.path(), m.device(), m.inode()), k -> new ArrayList<>())
            .add(m);
      }
    }
    Map<ModuleKey, MappedFile> modules = new LinkedHashMap<>();
    groups.forEach(
        (key, list) ->
            modules.put(
                key,
                new MappedFile(
                    key.path(), key.device(), key.inode(), list.get(0).deleted(), list)));
    return Collections.unmodifiableMap(modules);
  }

  @Override
  public String toString() {
    return "ProcessMaps{" + mappings.size() + " mappings}";
  }

  private record ModuleKey(String path, DeviceNumber device, long inode) {}
}
