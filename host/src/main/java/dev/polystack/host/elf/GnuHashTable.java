package dev.polystack.host.elf;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * DT_GNU_HASH table. It does not record the symbol count; the count is derived from the last
 * chain, which ends at the last hashed symbol (hashed symbols are sorted to the end of dynsym).
 */
final class GnuHashTable {
  private final ByteView v;
  private final long nbuckets;
  private final long symOffset;
  private final long bloomSize;
  private final int bloomShift;
  private final long bloomOff;
  private final long bucketsOff;
  private final long chainsOff;
  /** End of the table when known from its section, else end of input. */
  private final long limit;

  private GnuHashTable(ByteView v, long off, long limit, long nbuckets, long symOffset, long bloomSize,
      int bloomShift) {
    this.v = v;
    this.limit = limit;
    this.nbuckets = nbuckets;
    this.symOffset = symOffset;
    this.bloomSize = bloomSize;
    this.bloomShift = bloomShift;
    this.bloomOff = off + 16;
    this.bucketsOff = bloomOff + bloomSize * 8;
    this.chainsOff = bucketsOff + nbuckets * 4;
  }

  /** @param size table size from the section header, or -1 when only DT_GNU_HASH is known */
  static GnuHashTable read(ByteView v, long off, long size) throws ElfParseException {
    long limit = v.size();
    if (size >= 0) {
      v.check(off, size, "DT_GNU_HASH section");
      limit = off + size;
    }
    long nbuckets = v.u32(off, "DT_GNU_HASH nbuckets");
    long symOffset = v.u32(off + 4, "DT_GNU_HASH symoffset");
    long bloomSize = v.u32(off + 8, "DT_GNU_HASH bloom_size");
    long shift = v.u32(off + 12, "DT_GNU_HASH bloom_shift");
    if (nbuckets == 0 || bloomSize == 0) {
      throw v.error("DT_GNU_HASH at 0x" + Long.toHexString(off) + ": nbuckets=" + nbuckets + " bloom_size="
          + bloomSize + " (both must be non-zero)");
    }
    if (symOffset > SymbolReader.MAX_SYMBOLS) {
      throw v.error("DT_GNU_HASH symoffset " + symOffset + " exceeds limit");
    }
    long fixed = 16 + bloomSize * 8 + nbuckets * 4;
    v.check(off, fixed, "DT_GNU_HASH header, bloom filter and buckets");
    if (fixed > limit - off) {
      throw v.error("DT_GNU_HASH at 0x" + Long.toHexString(off) + ": bloom filter and buckets exceed table size");
    }
    return new GnuHashTable(v, off, limit, nbuckets, symOffset, bloomSize, (int) (shift & 63));
  }

  private long chain(long idx) throws ElfParseException {
    long p = chainsOff + (idx - symOffset) * 4;
    if (p + 4 > limit) {
      throw v.error("DT_GNU_HASH: chain for symbol " + idx + " runs past the end of the table");
    }
    return v.u32(p, "DT_GNU_HASH chain");
  }

  static long hash(byte[] name) {
    long h = 5381;
    for (byte b : name) {
      h = (h * 33 + (b & 0xff)) & 0xffffffffL;
    }
    return h;
  }

  /** Number of dynsym entries implied by the highest bucket and the end of its chain. */
  long symbolCount() throws ElfParseException {
    long max = 0;
    for (long i = 0; i < nbuckets; i++) {
      max = Math.max(max, v.u32(bucketsOff + i * 4, "DT_GNU_HASH bucket"));
    }
    if (max < symOffset) {
      return symOffset; // no hashed symbols at all
    }
    // Each step reads a new chain word; the bounds check on the read ends the walk on corrupt input.
    for (long idx = max; ; idx++) {
      if (idx > SymbolReader.MAX_SYMBOLS) {
        throw v.error("DT_GNU_HASH: chain runs past " + SymbolReader.MAX_SYMBOLS + " symbols");
      }
      long c = chain(idx);
      if ((c & 1) != 0) {
        return idx + 1;
      }
    }
  }

  /** Indices of chain entries whose name equals {@code name}. */
  List<Integer> find(String name, SymbolTable symbols) throws ElfParseException {
    List<Integer> out = new ArrayList<>(2);
    long h = hash(name.getBytes(StandardCharsets.UTF_8));
    long word = v.u64(bloomOff + ((h / 64) % bloomSize) * 8, "DT_GNU_HASH bloom word");
    long mask = (1L << (h % 64)) | (1L << ((h >>> bloomShift) % 64));
    if ((word & mask) != mask) {
      return out;
    }
    long idx = v.u32(bucketsOff + (h % nbuckets) * 4, "DT_GNU_HASH bucket");
    if (idx == 0) {
      return out;
    }
    if (idx < symOffset) {
      throw v.error("DT_GNU_HASH: bucket points at symbol " + idx + " below symoffset " + symOffset);
    }
    // idx strictly increases and every symbol access is range-checked, so the walk is bounded.
    for (; ; idx++) {
      if (idx >= symbols.size()) {
        throw v.error("DT_GNU_HASH: chain index " + idx + " beyond " + symbols.size() + " symbols");
      }
      long c = chain(idx);
      if ((c | 1) == (h | 1) && symbols.name((int) idx).equals(name)) {
        out.add((int) idx);
      }
      if ((c & 1) != 0) {
        return out;
      }
    }
  }
}
