package dev.polystack.otel.model;

import java.util.Objects;

/**
 * A mapped file of the target, as outputs need it: where it lies, which part of the file is
 * mapped, and how to find the same file again.
 *
 * @param start first address of the mapping
 * @param end address after the mapping
 * @param fileOffset file offset mapped at {@code start}
 * @param path file path or pseudo name ({@code [vdso]})
 * @param buildId GNU build id in hex, or empty
 * @param htlHash the file's {@link HtlHash}, or empty when the file could not be read
 */
public record ModuleInfo(long start, long end, long fileOffset, String path, String buildId,
    String htlHash) {
  public ModuleInfo {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(buildId, "buildId");
    Objects.requireNonNull(htlHash, "htlHash");
    if (Long.compareUnsigned(start, end) >= 0) {
      throw new IllegalArgumentException("empty module range at 0x" + Long.toHexString(start));
    }
  }

  /** A module whose file was not hashed. */
  public ModuleInfo(long start, long end, long fileOffset, String path, String buildId) {
    this(start, end, fileOffset, path, buildId, "");
  }

  public boolean contains(long address) {
    return Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0;
  }

  /** The file offset of {@code address}, which is what {@code module+0xOFFSET} labels show. */
  public long fileOffsetOf(long address) {
    return address - start + fileOffset;
  }

  /** The last path component. */
  public String baseName() {
    int slash = path.lastIndexOf('/');
    return slash < 0 ? path : path.substring(slash + 1);
  }
}
