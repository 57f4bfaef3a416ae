package dev.polystack.host.modules;

import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.elf.ElfFile;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Debug files already parsed, by the identity of the file (device and inode), shared by every
 * process an opener serves: a stripped library mapped by a thousand processes is parsed, and its
 * CRC32 computed, once. A candidate is still resolved inside each target's root and its identity
 * checked before a parsed file is reused, so the root-safety rule of {@link DebugFiles} holds per
 * process. Bounded, least recently used first out.
 */
final class ParsedDebugFiles {
  record Key(long dev, long inode) {}

  /** A parsed debug file and, once computed, the CRC32 of its whole content. */
  static final class Parsed {
    final ElfFile elf;
    private OptionalLong crc = OptionalLong.empty();

    Parsed(ElfFile elf) {
      this.elf = elf;
    }

    synchronized OptionalLong crc() {
      return crc;
    }

    synchronized void crc(long value) {
      crc = OptionalLong.of(value);
    }
  }

  private final Map<Key, Parsed> files;

  /** @param capacity most parsed debug files kept */
  ParsedDebugFiles(int capacity) {
    this.files = BoundedMap.leastRecentlyUsed(capacity);
  }

  synchronized Parsed get(Key key) {
    return files.get(key);
  }

  synchronized void put(Key key, Parsed parsed) {
    files.put(key, parsed);
  }
}
