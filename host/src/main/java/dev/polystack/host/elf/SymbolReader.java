package dev.polystack.host.elf;

/**
 * Decodes arrays of {@code Elf64_Sym}. Names are checked (inside the string table, terminated
 * within {@link ByteView#MAX_NAME} bytes) and hashed, not decoded: the table reads them from
 * the file when asked ({@link SymbolNames}), so a crafted file's names cannot fill the heap
 * (docs/reliability.md, "Root safety").
 */
final class SymbolReader {
  static final int SYM_SIZE = 24;
  /** Upper bound on symbols per table; real objects stay far below. */
  static final long MAX_SYMBOLS = 4L << 20;
  /** Names hashed by string table offset, direct-mapped: repeats of an offset are not rescanned. */
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
    if (strSize >= Integer.MAX_VALUE) {
      throw v.error((dynamic ? "dynstr" : "strtab") + " string table of " + strSize
          + " bytes exceeds 2 GiB");
    }
    SymbolTable.Builder out = new SymbolTable.Builder((int) count, dynamic,
        new SymbolNames(v.source(), strOff, strSize));
    long[] cachedOffset = new long[NAME_CACHE];
    int[] cachedHash = new int[NAME_CACHE];
    for (int i = 0; i < count; i++) {
      long o = symOff + i * entSize;
      long nameOff = syms.u32(o, "st_name");
      int info = syms.u8(o + 4, "st_info");
      int other = syms.u8(o + 5, "st_other");
      int shndx = syms.u16(o + 6, "st_shndx");
      long value = syms.u64(o + 8, "st_value");
      long size = syms.u64(o + 16, "st_size");
      int hash = -1;
      if (nameOff != 0) {
        if (nameOff >= strSize) {
          throw v.error("symbol " + i + ": st_name 0x" + Long.toHexString(nameOff)
              + " beyond string table size 0x" + Long.toHexString(strSize));
        }
        int slot = (int) (nameOff ^ (nameOff >>> 12)) & (NAME_CACHE - 1);
        if (cachedOffset[slot] == nameOff) {
          hash = cachedHash[slot];
        } else {
          hash = strs.cstringHash(strOff + nameOff, strOff + strSize, "symbol " + i + " name");
          cachedOffset[slot] = nameOff;
          cachedHash[slot] = hash;
        }
      }
      String version = null;
      boolean hidden = false;
      if (versions.present() && i > 0) {
        int vs = versions.versym(i);
        version = versions.versionName(vs, shndx != ElfSymbol.SHN_UNDEF);
        hidden = SymbolVersions.hidden(vs);
      }
      out.add(i, hash == -1 ? 0 : (int) nameOff, hash, value, size, info, other, shndx, version,
          hidden);
    }
    return out.build();
  }
}
