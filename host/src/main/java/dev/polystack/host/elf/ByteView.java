package dev.polystack.host.elf;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Bounds-checked little-endian reads. Every read validates its range first so that malformed
 * offsets surface as {@link ElfParseException} instead of buffer exceptions.
 */
final class ByteView {
  /** Longest symbol or section name accepted; longer ones indicate corruption. */
  static final int MAX_NAME = 4096;

  private final ByteBuffer buf;
  private final long size;
  private final String origin;

  ByteView(ByteBuffer buf, String origin) {
    this.buf = buf;
    this.size = buf.capacity();
    this.origin = origin;
  }

  long size() {
    return size;
  }

  String origin() {
    return origin;
  }

  boolean inRange(long off, long len) {
    return off >= 0 && len >= 0 && off <= size && len <= size - off;
  }

  void check(long off, long len, String what) throws ElfParseException {
    if (!inRange(off, len)) {
      throw error(what + ": range 0x" + Long.toHexString(off) + "+0x" + Long.toHexString(len)
          + " outside input of 0x" + Long.toHexString(size) + " bytes");
    }
  }

  ElfParseException error(String message) {
    return new ElfParseException(origin + ": " + message);
  }

  int u8(long off, String what) throws ElfParseException {
    check(off, 1, what);
    return buf.get((int) off) & 0xff;
  }

  int u16(long off, String what) throws ElfParseException {
    check(off, 2, what);
    return buf.getShort((int) off) & 0xffff;
  }

  long u32(long off, String what) throws ElfParseException {
    check(off, 4, what);
    return buf.getInt((int) off) & 0xffffffffL;
  }

  long u64(long off, String what) throws ElfParseException {
    check(off, 8, what);
    return buf.getLong((int) off);
  }

  byte[] bytes(long off, long len, String what) throws ElfParseException {
    check(off, len, what);
    byte[] out = new byte[(int) len];
    buf.get((int) off, out);
    return out;
  }

  /** NUL-terminated string starting at {@code off}, which must end before {@code limit}. */
  String cstring(long off, long limit, String what) throws ElfParseException {
    long end = Math.min(limit, size);
    if (off < 0 || off >= end) {
      throw error(what + ": string offset 0x" + Long.toHexString(off) + " outside table ending at 0x"
          + Long.toHexString(end));
    }
    long max = Math.min(end, off + MAX_NAME + 1);
    for (long p = off; p < max; p++) {
      if (buf.get((int) p) == 0) {
        int len = (int) (p - off);
        byte[] b = new byte[len];
        buf.get((int) off, b);
        return new String(b, StandardCharsets.UTF_8);
      }
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
