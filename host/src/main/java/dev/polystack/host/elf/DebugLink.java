package dev.polystack.host.elf;

import java.util.Objects;

/** Contents of .gnu_debuglink: the separate debug file name and the CRC32 of that file. */
public record DebugLink(String fileName, int crc32) {
  public DebugLink {
    Objects.requireNonNull(fileName, "fileName");
  }

  public long crc32Unsigned() {
    return crc32 & 0xffffffffL;
  }
}
