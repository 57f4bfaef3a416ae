package dev.polystack.host.elf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The names of one symbol table, read from its string table when asked rather than held: a
 * parsed table keeps a name's offset and hash, and the bytes stay in the file (names were most
 * of the agent's heap; docs/benchmarks.md, "Where the agent's memory and CPU go"). A name is at
 * most {@link ByteView#MAX_NAME} bytes; a file that cannot be read any more (shrunk, closed)
 * gives empty names, never an exception.
 */
final class SymbolNames {
  /** FNV-1a over the name's bytes: the same function for names read here and names asked for. */
  static final int HASH_SEED = 0x811c9dc5;
  private static final int HASH_PRIME = 0x01000193;
  /** First read of a name; the longest names need a second read. */
  private static final int FIRST_READ = 128;

  private final ElfSource source;
  private final long tableOffset;
  private final long tableSize;

  /** Names in the string table at {@code [tableOffset, tableOffset + tableSize)} of {@code source}. */
  SymbolNames(ElfSource source, long tableOffset, long tableSize) {
    if (tableOffset < 0 || tableSize < 0) {
      throw new IllegalArgumentException("string table at " + tableOffset + "+" + tableSize);
    }
    this.source = source;
    this.tableOffset = tableOffset;
    this.tableSize = tableSize;
  }

  /** Names held in memory, for tables built from symbols rather than read from a file. */
  static SymbolNames inMemory(byte[] stringTable) {
    return new SymbolNames(ElfSource.ofFileBytes(stringTable, "symbol names"), 0,
        stringTable.length);
  }

  static final SymbolNames NONE = inMemory(new byte[1]);

  static int step(int hash, byte b) {
    return (hash ^ (b & 0xff)) * HASH_PRIME;
  }

  /** The hash of {@code name} as {@link ByteView#cstringHash} computes it; -1 when empty. */
  static int hash(String name) {
    if (name.isEmpty()) {
      return -1;
    }
    int h = HASH_SEED;
    for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
      h = step(h, b);
    }
    return h;
  }

  /** The name at {@code offset} in the string table; empty for offset 0 or an unreadable file. */
  String at(int offset) {
    if (offset <= 0 || offset >= tableSize) {
      return "";
    }
    long limit = Math.min(tableSize - offset, ByteView.MAX_NAME + 1L);
    byte[] b = new byte[(int) Math.min(FIRST_READ, limit)];
    try {
      int n = source.read(tableOffset + offset, b, 0, b.length);
      int end = terminator(b, n);
      if (end < 0 && n == b.length && b.length < limit) {
        b = Arrays.copyOf(b, (int) limit);
        n += source.read(tableOffset + offset + n, b, n, b.length - n);
        end = terminator(b, n);
      }
      return end < 0 ? "" : new String(b, 0, end, StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      return ""; // the file went away (closed, shrunk): the symbol stays, unnamed
    }
  }

  /** The whole string table, read once, for decoding many names (empty if unreadable). */
  byte[] all() {
    byte[] b = new byte[(int) Math.min(tableSize, ByteView.MAX_REGION)];
    try {
      int n = source.read(tableOffset, b, 0, b.length);
      return n == b.length ? b : Arrays.copyOf(b, Math.max(n, 0));
    } catch (IOException | RuntimeException e) {
      return new byte[0];
    }
  }

  /** The name at {@code offset} of a table read whole by {@link #all}. */
  static String at(byte[] table, int offset) {
    if (offset <= 0 || offset >= table.length) {
      return "";
    }
    int max = (int) Math.min(table.length, offset + ByteView.MAX_NAME + 1L);
    for (int i = offset; i < max; i++) {
      if (table[i] == 0) {
        return new String(table, offset, i - offset, StandardCharsets.UTF_8);
      }
    }
    return "";
  }

  private static int terminator(byte[] b, int n) {
    for (int i = 0; i < n; i++) {
      if (b[i] == 0) {
        return i;
      }
    }
    return -1;
  }
}
