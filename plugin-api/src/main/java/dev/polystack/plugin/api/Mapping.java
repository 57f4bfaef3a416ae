package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * One line of a target's memory map.
 *
 * @param path the file path, a pseudo name such as {@code [vdso]}, or empty for anonymous memory
 * @param deleted the backing file was removed or replaced after it was mapped
 * @since 1.0
 */
public record Mapping(
    long start,
    long end,
    long fileOffset,
    boolean readable,
    boolean writable,
    boolean executable,
    long device,
    long inode,
    String path,
    boolean deleted) {

  public Mapping {
    Objects.requireNonNull(path, "path");
    if (Long.compareUnsigned(start, end) >= 0) {
      throw new IllegalArgumentException("empty mapping at 0x" + Long.toHexString(start));
    }
  }

  public boolean contains(long address) {
    return Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0;
  }

  public boolean isAnonymous() {
    return path.isEmpty();
  }

  public boolean isPseudo() {
    return path.startsWith("[");
  }
}
