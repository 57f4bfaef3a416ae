package dev.polystack.host.elf;

/**
 * Decodes arrays of {@code Elf64_Sym}. Symbols naming the same string table offset share one
 * {@code String} (through a small cache by offset), and the name bytes decoded from one table
 * are capped in total, so a small file cannot make the heap hold far more than its own size
 * (docs/reliability.md, "Root safety").
 */
final class SymbolReader {
  static final int SYM_SIZE = 24;
  /** Upper bound on symbols per table; real objects stay far below. */
  static final long MAX_SYMBOLS = 4L << 20;
  /**
   * Upper bound on the name bytes decoded from one table: a linker writes each name once
   * (tail-merged suffixes aside) and repeats of an offset mostly hit the cache, so twice the
   * string table plus slack covers real files.
   */
  static final long NAME_BYTES_SLACK = 1L << 20;
  /** Absolute bound on those bytes, whatever the string table's size. */
  static final long MAX_NAME_BYTES = 256L << 20;
  /** Names remembered by string table offset, direct-mapped. */
  private static final int NAME_CACHE = 4096;

  private SymbolReader() {}

  static SymbolTable read(ByteView v, long symOff, long count, long entSize, long strOff, long strSize,
      SymbolVersions versions, boolean dynamic) throws ElfParseException {
    if (entSize < SYM_SIZE || entSize > 0x1000) {
      throw v.error("symbol entry size " + entSize + " unsupported");
    }
    if (count < 0 || count > MAX_SYMBOLS) {
      throw v.error("symbol count " + count + " exceeds limit " + MAX_SYMBOLS);
    }
    // Both tables are read whole, the names in hash order rather than file order (.dynsym under
    // DT_GNU_HASH): held in memory for this scan, page by page they would miss on every name.
    ByteView syms = v.region(symOff, count * entSize, (dynamic ? "dynsym" : "symtab") + " array");
    ByteView strs = v.region(strOff, strSize, (dynamic ? "dynstr" : "strtab") + " string table");
    SymbolTable.Builder out = new SymbolTable.Builder((int) count, dynamic);
    long[] cachedOffset = new long[NAME_CACHE];
    String[] cachedName = new String[NAME_CACHE];
    long nameBudget = Math.min(2 * strSize + NAME_BYTES_SLACK, MAX_NAME_BYTES);
    long nameBytes = 0;
    for (int i = 0; i < count; i++) {
      long o = symOff + i * entSize;
      long nameOff = syms.u32(o, "st_name");
      int info = syms.u8(o + 4, "st_info");
      int other = syms.u8(o + 5, "st_other");
      int shndx = syms.u16(o + 6, "st_shndx");
      long value = syms.u64(o + 8, "st_value");
      long size = syms.u64(o + 16, "st_size");
      String name = "";
      if (nameOff != 0) {
        if (nameOff >= strSize) {
          throw v.error("symbol " + i + ": st_name 0x" + Long.toHexString(nameOff)
              + " beyond string table size 0x" + Long.toHexString(strSize));
        }
        int slot = (int) (nameOff ^ (nameOff >>> 12)) & (NAME_CACHE - 1);
        name = cachedOffset[slot] == nameOff ? cachedName[slot] : null;
        if (name == null) {
          name = strs.cstring(strOff + nameOff, strOff + strSize, "symbol " + i + " name");
          nameBytes += name.length() + 1;
          if (nameBytes > nameBudget) {
            throw v.error((dynamic ? "dynsym" : "symtab") + ": symbol names exceed "
                + nameBudget + " bytes by symbol " + i + " (string table of " + strSize
                + " bytes): a crafted table");
          }
          cachedOffset[slot] = nameOff;
          cachedName[slot] = name;
        }
      }
      String version = null;
      boolean hidden = false;
      if (versions.present() && i > 0) {
        int vs = versions.versym(i);
        version = versions.versionName(vs, shndx != ElfSymbol.SHN_UNDEF);
        hidden = SymbolVersions.hidden(vs);
      }
      out.add(i, name, value, size, info, other, shndx, version, hidden);
    }
    return out.build();
  }
}
