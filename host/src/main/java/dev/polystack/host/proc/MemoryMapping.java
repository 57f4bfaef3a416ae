package dev.polystack.host.proc;

import java.util.Objects;

/**
 * One line of {@code /proc/PID/maps}. Addresses and offsets are unsigned 64-bit values held in
 * {@code long}; compare them with {@link Long#compareUnsigned} ({@code [vsyscall]} lies above
 * 2^63).
 *
 * @param start first address (inclusive)
 * @param end end address (exclusive)
 * @param offset file offset of {@code start}
 * @param path path or pseudo name without the {@code " (deleted)"} suffix; empty if anonymous
 * @param deleted the kernel marked the backing file as deleted
 */
public record MemoryMapping(
    long start,
    long end,
    Permissions permissions,
    long offset,
    DeviceNumber device,
    long inode,
    String path,
    boolean deleted) {

  static final String DELETED_SUFFIX = " (deleted)";

  public MemoryMapping {
    Objects.requireNonNull(permissions, "permissions");
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(path, "path");
    if (Long.compareUnsigned(start, end) >= 0) {
      throw new IllegalArgumentException(
          "empty or inverted range " + Long.toHexString(start) + "-" + Long.toHexString(end));
    }
  }

  public long size() {
    return end - start;
  }

  public boolean contains(long address) {
    return Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0;
  }

  public MappingKind kind() {
    return MappingKind.classify(path);
  }

  public boolean isExecutable() {
    return permissions.executable();
  }

  /** True for mappings backed by a file (kind {@link MappingKind#FILE}). */
  public boolean isFileBacked() {
    return kind() == MappingKind.FILE;
  }

  @Override
  public String toString() {
    return Long.toHexString(start)
        + "-"
        + Long.toHexString(end)
        + " "
        + permissions
        + " "
        + Long.toHexString(offset)
        + " "
        + device
        + " "
        + Long.toUnsignedString(inode)
        + " "
        + path
        + (deleted ? DELETED_SUFFIX : "");
  }
}
