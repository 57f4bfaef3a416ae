package dev.polystack.host.proc;

import java.util.List;
import java.util.Objects;

/**
 * All mappings of one file (same path, device and inode), in address order. A shared library or
 * executable is typically several mappings with different permissions.
 */
public record MappedFile(
    String path, DeviceNumber device, long inode, boolean deleted, List<MemoryMapping> mappings) {

  public MappedFile {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(device, "device");
    mappings = List.copyOf(mappings);
    if (mappings.isEmpty()) {
      throw new IllegalArgumentException("a module needs at least one mapping");
    }
    for (MemoryMapping m : mappings) {
      if (!m.path().equals(path) || !m.device().equals(device) || m.inode() != inode) {
        throw new IllegalArgumentException("mapping " + m + " does not belong to " + path);
      }
    }
  }

  /**
   * What makes two mappings the same binary for a cache: the mapped inode and the name it was
   * mapped under (a plug-in may decide by name; a file replaced in place keeps neither).
   */
  public record Identity(DeviceNumber device, long inode, String path) {
    public Identity {
      Objects.requireNonNull(device, "device");
      Objects.requireNonNull(path, "path");
    }
  }

  public Identity identity() {
    return new Identity(device, inode, path);
  }

  /** Lowest mapped address of the file. */
  public long start() {
    return mappings.get(0).start();
  }

  /** End of the highest mapping of the file (exclusive). */
  public long end() {
    return mappings.get(mappings.size() - 1).end();
  }

  /**
   * Address at which file offset 0 would be mapped, based on the lowest mapping. This is the load
   * base used to turn an ELF virtual address into a runtime address for typical shared objects.
   */
  public long loadBase() {
    MemoryMapping first = mappings.get(0);
    return first.start() - first.offset();
  }

  public List<MemoryMapping> executableMappings() {
    return mappings.stream().filter(MemoryMapping::isExecutable).toList();
  }
}
