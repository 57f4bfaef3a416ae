package dev.polystack.host.elf;

import java.util.HashMap;
import java.util.Map;

/**
 * GNU symbol versioning: the versym array (one half-word per dynsym entry) and the version names
 * from verdef (definitions) and verneed (requirements of undefined symbols).
 */
final class SymbolVersions {
  static final int VER_NDX_LOCAL = 0;
  static final int VER_NDX_GLOBAL = 1;
  private static final int VERSYM_HIDDEN = 0x8000;
  private static final int VER_FLG_BASE = 1;
  /** Version indices are 15 bits, so no object can have more distinct records. */
  private static final int MAX_RECORDS = 0x8000;

  private final ByteView view;
  private final long versymOffset;
  private final long versymCount;
  private final Map<Integer, String> defined;
  private final Map<Integer, String> needed;

  private SymbolVersions(ByteView view, long versymOffset, long versymCount, Map<Integer, String> defined,
      Map<Integer, String> needed) {
    this.view = view;
    this.versymOffset = versymOffset;
    this.versymCount = versymCount;
    this.defined = defined;
    this.needed = needed;
  }

  static SymbolVersions none(ByteView view) {
    return new SymbolVersions(view, -1, 0, Map.of(), Map.of());
  }

  /**
   * @param versymOffset input offset of the versym array or -1
   * @param verdefOffset input offset of verdef or -1
   * @param verneedOffset input offset of verneed or -1
   */
  static SymbolVersions read(ByteView v, long versymOffset, long symbolCount, long verdefOffset, long verdefNum,
      long verneedOffset, long verneedNum, long strOff, long strSize) throws ElfParseException {
    if (versymOffset < 0) {
      return none(v);
    }
    v.check(versymOffset, symbolCount * 2, "versym array");
    Map<Integer, String> defs = new HashMap<>();
    if (verdefOffset >= 0) {
      long n = Math.min(verdefNum, MAX_RECORDS);
      long off = verdefOffset;
      for (long i = 0; i < n; i++) {
        int version = v.u16(off, "vd_version");
        if (version != 1) {
          throw v.error("verdef at 0x" + Long.toHexString(off) + ": unsupported vd_version " + version);
        }
        int flags = v.u16(off + 2, "vd_flags");
        int ndx = v.u16(off + 4, "vd_ndx") & 0x7fff;
        int cnt = v.u16(off + 6, "vd_cnt");
        long aux = v.u32(off + 12, "vd_aux");
        long next = v.u32(off + 16, "vd_next");
        if (cnt > 0 && (flags & VER_FLG_BASE) == 0) {
          long nameOff = v.u32(off + aux, "vda_name");
          defs.putIfAbsent(ndx, name(v, nameOff, strOff, strSize, "verdef name"));
        }
        if (next == 0) {
          break;
        }
        off += next; // vd_next is unsigned 32-bit, so off strictly increases and n bounds the walk
      }
    }
    Map<Integer, String> needs = new HashMap<>();
    if (verneedOffset >= 0) {
      long n = Math.min(verneedNum, MAX_RECORDS);
      long off = verneedOffset;
      int total = 0;
      for (long i = 0; i < n; i++) {
        int version = v.u16(off, "vn_version");
        if (version != 1) {
          throw v.error("verneed at 0x" + Long.toHexString(off) + ": unsupported vn_version " + version);
        }
        int cnt = v.u16(off + 2, "vn_cnt");
        long aux = off + v.u32(off + 8, "vn_aux");
        for (int j = 0; j < cnt; j++) {
          if (++total > MAX_RECORDS) {
            throw v.error("verneed: more than " + MAX_RECORDS + " auxiliary records");
          }
          int other = v.u16(aux + 6, "vna_other") & 0x7fff;
          long nameOff = v.u32(aux + 8, "vna_name");
          needs.putIfAbsent(other, name(v, nameOff, strOff, strSize, "verneed name"));
          long anext = v.u32(aux + 12, "vna_next");
          if (anext == 0) {
            break;
          }
          aux += anext;
        }
        long next = v.u32(off + 12, "vn_next");
        if (next == 0) {
          break;
        }
        off += next;
      }
    }
    return new SymbolVersions(v, versymOffset, symbolCount, defs, needs);
  }

  private static String name(ByteView v, long nameOff, long strOff, long strSize, String what)
      throws ElfParseException {
    if (nameOff >= strSize) {
      throw v.error(what + ": offset 0x" + Long.toHexString(nameOff) + " beyond string table size 0x"
          + Long.toHexString(strSize));
    }
    return v.cstring(strOff + nameOff, strOff + strSize, what);
  }

  boolean present() {
    return versymOffset >= 0;
  }

  /** Raw versym value for symbol {@code index}, or VER_NDX_GLOBAL when absent. */
  int versym(long index) throws ElfParseException {
    if (versymOffset < 0 || index >= versymCount) {
      return VER_NDX_GLOBAL;
    }
    return view.u16(versymOffset + index * 2, "versym entry");
  }

  /** Version name for a defined or undefined symbol, or null for local/global/unknown indices. */
  String versionName(int versym, boolean definedSymbol) {
    int idx = versym & 0x7fff;
    if (idx <= VER_NDX_GLOBAL) {
      return null;
    }
    String n = definedSymbol ? defined.get(idx) : needed.get(idx);
    if (n == null) {
      n = definedSymbol ? needed.get(idx) : defined.get(idx);
    }
    return n;
  }

  static boolean hidden(int versym) {
    return (versym & VERSYM_HIDDEN) != 0;
  }
}
