package dev.polystack.host.elf;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Bounds-checked little-endian reads. Every read validates its range first so that malformed
 * offsets surface as {@link ElfParseException} instead of buffer exceptions.
 *
 * <p>An input held in memory is read directly; a file through a small cache of pages filled by
 * positional reads ({@link ElfSource}), so a file that shrinks under the parser gives a short
 * read and an {@link ElfParseException}, and the cache bounds what one file keeps in the heap.
 */
final class ByteView {
  /** Longest symbol or section name accepted; longer ones indicate corruption. */
  static final int MAX_NAME = 4096;
  /** Largest single copy out of the input (instructions of one CFI record, a build id...). */
  static final long MAX_BYTES = 16L << 20;

  private static final int PAGE_SHIFT = 14;
  private static final int PAGE = 1 << PAGE_SHIFT;
  /** Pages cached per file: 256 KiB. */
  private static final int SLOTS = 16;

  private static final VarHandle U16 =
      MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle U32 =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle U64 =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  /** One cached page; final fields make a racy publication through {@link #pages} safe. */
  private record Page(long index, byte[] bytes) {}

  /** Regions larger than this stay paged: a crafted section must not be copied whole. */
  static final long MAX_REGION = 64L << 20;

  private final ElfSource source;
  /** Input bytes from offset {@link #base} held in memory (the whole input or a region). */
  private final byte[] whole;
  private final long base;
  private final Page[] pages;
  private final long[] lastUse;
  private long clock;
  private int mru;
  private final long size;
  /** Offsets readable through this view: the whole input, or one region of it. */
  private final long lo;
  private final long hi;
  private final String origin;

  ByteView(ElfSource source) {
    this.source = source;
    this.whole = source instanceof BufferSource b ? b.array() : null;
    this.base = 0;
    this.pages = whole == null ? new Page[SLOTS] : null;
    this.lastUse = whole == null ? new long[SLOTS] : null;
    this.size = source.size();
    this.lo = 0;
    this.hi = size;
    this.origin = source.description();
  }

  private ByteView(ByteView input, byte[] region, long off) {
    this.source = input.source;
    this.whole = region;
    this.base = off;
    this.pages = null;
    this.lastUse = null;
    this.size = input.size;
    this.lo = off;
    this.hi = off + region.length;
    this.origin = input.origin;
  }

  /**
   * A view of input bytes {@code [off, off + len)} copied into memory once, read at the same
   * offsets; reads outside fail. For tables searched while a target thread is held (.eh_frame
   * and its search table), where a page-cache miss per lookup would lengthen the pause. An input
   * already in memory, or a region over {@link #MAX_REGION}, gives this view itself.
   */
  ByteView region(long off, long len, String what) throws ElfParseException {
    check(off, len, what);
    if (whole != null || len > MAX_REGION) {
      return this;
    }
    byte[] b = new byte[(int) len];
    readFully(off, b, 0, b.length);
    return new ByteView(this, b, off);
  }

  long size() {
    return size;
  }

  String origin() {
    return origin;
  }

  boolean inRange(long off, long len) {
    return off >= lo && len >= 0 && off <= hi && len <= hi - off;
  }

  void check(long off, long len, String what) throws ElfParseException {
    if (!inRange(off, len)) {
      throw error(what + ": range 0x" + Long.toHexString(off) + "+0x" + Long.toHexString(len)
          + " outside " + (lo == 0 && hi == size ? "input of 0x" + Long.toHexString(size)
              + " bytes" : "loaded range 0x" + Long.toHexString(lo) + "-0x"
              + Long.toHexString(hi)));
    }
  }

  ElfParseException error(String message) {
    return new ElfParseException(origin + ": " + message);
  }

  /**
   * The cached page holding input offset {@code index << PAGE_SHIFT}, read if absent. The cache
   * is fully associative with least-recently-used replacement: symbol, string and version tables
   * are read as interleaved streams, and a direct-mapped cache thrashes whenever two of them
   * advance in step on colliding pages. Unsynchronized: a race only costs a duplicate read.
   */
  private byte[] page(long index) throws ElfParseException {
    int hint = mru;
    Page p = pages[hint];
    if (p != null && p.index() == index) {
      return p.bytes();
    }
    int victim = 0;
    long oldest = Long.MAX_VALUE;
    for (int i = 0; i < SLOTS; i++) {
      p = pages[i];
      if (p == null) {
        if (oldest != Long.MIN_VALUE) {
          victim = i;
          oldest = Long.MIN_VALUE; // an empty slot is the best victim
        }
        continue;
      }
      if (p.index() == index) {
        mru = i;
        lastUse[i] = ++clock;
        return p.bytes();
      }
      if (lastUse[i] < oldest) {
        oldest = lastUse[i];
        victim = i;
      }
    }
    long start = index << PAGE_SHIFT;
    byte[] b = new byte[(int) Math.min(PAGE, size - start)];
    readFully(start, b, 0, b.length);
    pages[victim] = new Page(index, b);
    lastUse[victim] = ++clock;
    mru = victim;
    return b;
  }

  private void readFully(long off, byte[] dst, int dstOff, int len) throws ElfParseException {
    int n;
    try {
      n = source.read(off, dst, dstOff, len);
    } catch (IOException e) {
      throw error("cannot read 0x" + Long.toHexString(len) + " bytes at 0x"
          + Long.toHexString(off) + ": " + e);
    }
    if (n != len) {
      throw error("file shrank below 0x" + Long.toHexString(off + len)
          + " bytes while it was read (it was 0x" + Long.toHexString(size)
          + "): changed on disk");
    }
  }

  int u8(long off, String what) throws ElfParseException {
    check(off, 1, what);
    if (whole != null) {
      return whole[(int) (off - base)] & 0xff;
    }
    return page(off >>> PAGE_SHIFT)[(int) (off & (PAGE - 1))] & 0xff;
  }

  int u16(long off, String what) throws ElfParseException {
    check(off, 2, what);
    if (whole != null) {
      return (short) U16.get(whole, (int) (off - base)) & 0xffff;
    }
    int in = (int) (off & (PAGE - 1));
    if (in <= PAGE - 2) {
      return (short) U16.get(page(off >>> PAGE_SHIFT), in) & 0xffff;
    }
    return (int) straddling(off, 2, what);
  }

  long u32(long off, String what) throws ElfParseException {
    check(off, 4, what);
    if (whole != null) {
      return (int) U32.get(whole, (int) (off - base)) & 0xffffffffL;
    }
    int in = (int) (off & (PAGE - 1));
    if (in <= PAGE - 4) {
      return (int) U32.get(page(off >>> PAGE_SHIFT), in) & 0xffffffffL;
    }
    return straddling(off, 4, what);
  }

  long u64(long off, String what) throws ElfParseException {
    check(off, 8, what);
    if (whole != null) {
      return (long) U64.get(whole, (int) (off - base));
    }
    int in = (int) (off & (PAGE - 1));
    if (in <= PAGE - 8) {
      return (long) U64.get(page(off >>> PAGE_SHIFT), in);
    }
    return straddling(off, 8, what);
  }

  /** A little-endian value whose bytes span two pages. */
  private long straddling(long off, int len, String what) throws ElfParseException {
    long v = 0;
    for (int i = len - 1; i >= 0; i--) {
      v = (v << 8) | u8(off + i, what);
    }
    return v;
  }

  byte[] bytes(long off, long len, String what) throws ElfParseException {
    check(off, len, what);
    if (len > MAX_BYTES) {
      throw error(what + ": 0x" + Long.toHexString(len) + " bytes at 0x" + Long.toHexString(off)
          + " exceed the " + (MAX_BYTES >> 20) + " MiB limit of one read");
    }
    byte[] out = new byte[(int) len];
    copy(off, out, 0, out.length);
    return out;
  }

  /** Copies input bytes already checked to be in range. */
  private void copy(long off, byte[] dst, int dstOff, int len) throws ElfParseException {
    if (whole != null) {
      System.arraycopy(whole, (int) (off - base), dst, dstOff, len);
      return;
    }
    if (len > 2 * PAGE) {
      readFully(off, dst, dstOff, len); // a bulk read would only evict the cache
      return;
    }
    int done = 0;
    while (done < len) {
      long at = off + done;
      int in = (int) (at & (PAGE - 1));
      byte[] p = page(at >>> PAGE_SHIFT);
      int n = Math.min(len - done, p.length - in);
      System.arraycopy(p, in, dst, dstOff + done, n);
      done += n;
    }
  }

  /** The input this view reads. */
  ElfSource source() {
    return source;
  }

  /**
   * {@link SymbolNames#hash} of the NUL-terminated string at {@code off}, checked as {@link
   * #cstring} checks it, without decoding it; -1 for an empty string.
   */
  int cstringHash(long off, long limit, String what) throws ElfParseException {
    int[] hash = {SymbolNames.HASH_SEED};
    long end = cstringEnd(off, limit, what, hash);
    return end == off ? -1 : hash[0];
  }

  /** NUL-terminated string starting at {@code off}, which must end before {@code limit}. */
  String cstring(long off, long limit, String what) throws ElfParseException {
    int len = (int) (cstringEnd(off, limit, what, null) - off);
    if (whole != null) {
      return new String(whole, (int) (off - base), len, StandardCharsets.UTF_8);
    }
    byte[] b = new byte[len];
    copy(off, b, 0, len);
    return new String(b, StandardCharsets.UTF_8);
  }

  /**
   * Where the NUL-terminated string at {@code off} ends (its terminator), which must be before
   * {@code limit} and within {@link #MAX_NAME} bytes; its bytes folded into {@code hash[0]}
   * ({@link SymbolNames#step}) when {@code hash} is not null.
   */
  private long cstringEnd(long off, long limit, String what, int[] hash)
      throws ElfParseException {
    long end = Math.min(limit, hi);
    if (off < lo || off >= end) {
      throw error(what + ": string offset 0x" + Long.toHexString(off)
          + " outside table ending at 0x" + Long.toHexString(end));
    }
    long max = Math.min(end, off + MAX_NAME + 1);
    // Scan whole arrays (the input, or one cached page at a time) for the terminator.
    for (long p = off; p < max; ) {
      byte[] arr;
      int at;
      int n;
      if (whole != null) {
        arr = whole;
        at = (int) (p - base);
        n = (int) (max - p);
      } else {
        arr = page(p >>> PAGE_SHIFT);
        at = (int) (p & (PAGE - 1));
        n = (int) Math.min(max - p, arr.length - at);
      }
      for (int k = 0; k < n; k++) {
        byte b = arr[at + k];
        if (b == 0) {
          return p + k;
        }
        if (hash != null) {
          hash[0] = SymbolNames.step(hash[0], b);
        }
      }
      p += n;
    }
    throw error(what + ": unterminated or over-long (> " + MAX_NAME + " bytes) string at 0x"
        + Long.toHexString(off));
  }


  Cursor cursor(long start, long end, String what) throws ElfParseException {
    check(start, end - start, what);
    return new Cursor(start, end, what);
  }

  /** Sequential reader over {@code [pos, end)}, used for variable-length DWARF-style data. */
  final class Cursor extends Leb128Reader<ElfParseException> {
    private long pos;
    private final long end;
    private final String what;

    private Cursor(long pos, long end, String what) {
      this.pos = pos;
      this.end = end;
      this.what = what;
    }

    long pos() {
      return pos;
    }

    long end() {
      return end;
    }

    long remaining() {
      return end - pos;
    }

    private void need(long n) throws ElfParseException {
      if (n < 0 || n > end - pos) {
        throw error(what + ": need " + n + " bytes at 0x" + Long.toHexString(pos) + " but record ends at 0x"
            + Long.toHexString(end));
      }
    }

    void seek(long p) throws ElfParseException {
      if (p < 0 || p > end) {
        throw error(what + ": seek to 0x" + Long.toHexString(p) + " beyond 0x" + Long.toHexString(end));
      }
      pos = p;
    }

    void skip(long n) throws ElfParseException {
      need(n);
      pos += n;
    }

    int u8() throws ElfParseException {
      need(1);
      return ByteView.this.u8(pos++, what);
    }

    int u16() throws ElfParseException {
      need(2);
      int v = ByteView.this.u16(pos, what);
      pos += 2;
      return v;
    }

    long u32() throws ElfParseException {
      need(4);
      long v = ByteView.this.u32(pos, what);
      pos += 4;
      return v;
    }

    long u64() throws ElfParseException {
      need(8);
      long v = ByteView.this.u64(pos, what);
      pos += 8;
      return v;
    }

    @Override
    protected int nextByte() throws ElfParseException {
      return u8();
    }

    @Override
    protected ElfParseException tooLong() {
      return error(what + ": LEB128 longer than " + MAX_BYTES + " bytes at 0x"
          + Long.toHexString(pos));
    }

    String cstring() throws ElfParseException {
      String s = ByteView.this.cstring(pos, end, what);
      // Length in bytes, not chars: re-scan for the terminator to advance exactly.
      long p = pos;
      while (ByteView.this.u8(p, what) != 0) {
        p++;
      }
      pos = p + 1;
      return s;
    }

    byte[] bytes(long n) throws ElfParseException {
      need(n);
      byte[] b = ByteView.this.bytes(pos, n, what);
      pos += n;
      return b;
    }
  }
}
