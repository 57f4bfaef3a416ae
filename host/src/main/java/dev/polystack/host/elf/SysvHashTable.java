package dev.polystack.host.elf;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** DT_HASH table. nchain equals the number of dynsym entries, which is why loaders trust it. */
final class SysvHashTable {
  private final ByteView v;
  private final long bucketsOff;
  private final long chainsOff;
  private final long nbucket;
  private final long nchain;

  private SysvHashTable(ByteView v, long off, long nbucket, long nchain) {
    this.v = v;
    this.nbucket = nbucket;
    this.nchain = nchain;
    this.bucketsOff = off + 8;
    this.chainsOff = bucketsOff + nbucket * 4;
  }

  static SysvHashTable read(ByteView v, long off) throws ElfParseException {
    long nbucket = v.u32(off, "DT_HASH nbucket");
    long nchain = v.u32(off + 4, "DT_HASH nchain");
    if (nbucket == 0 && nchain != 0) {
      throw v.error("DT_HASH at 0x" + Long.toHexString(off) + ": zero buckets for " + nchain + " chains");
    }
    if (nchain > SymbolReader.MAX_SYMBOLS) {
      throw v.error("DT_HASH nchain " + nchain + " exceeds limit");
    }
    v.check(off, 8 + (nbucket + nchain) * 4, "DT_HASH table (nbucket=" + nbucket + ", nchain=" + nchain + ")");
    return new SysvHashTable(v, off, nbucket, nchain);
  }

  long symbolCount() {
    return nchain;
  }

  static long hash(byte[] name) {
    long h = 0;
    for (byte b : name) {
      h = ((h << 4) + (b & 0xff)) & 0xffffffffL;
      long g = h & 0xf0000000L;
      if (g != 0) {
        h ^= g >>> 24;
      }
      h &= ~g;
    }
    return h;
  }

  /** Indices of all chain entries whose name equals {@code name}. */
  List<Integer> find(String name, SymbolTable symbols) throws ElfParseException {
    List<Integer> out = new ArrayList<>(2);
    if (nbucket == 0) {
      return out;
    }
    long h = hash(name.getBytes(StandardCharsets.UTF_8));
    long idx = v.u32(bucketsOff + (h % nbucket) * 4, "DT_HASH bucket");
    // A well-formed chain visits each symbol at most once, so more steps than nchain means a loop.
    for (long steps = 0; idx != 0; steps++) {
      if (steps > nchain) {
        throw v.error("DT_HASH: chain loop detected while looking up '" + name + "'");
      }
      if (idx >= nchain || idx >= symbols.size()) {
        throw v.error("DT_HASH: chain index " + idx + " beyond " + Math.min(nchain, symbols.size()) + " symbols");
      }
      if (symbols.name((int) idx).equals(name)) {
        out.add((int) idx);
      }
      idx = v.u32(chainsOff + idx * 4, "DT_HASH chain");
    }
    return out;
  }
}
