package dev.polystack.host.unwind;

import dev.polystack.host.elf.Leb128Reader;

/** A bounded cursor over DWARF bytes; every overrun is a {@link CfiException}. */
final class CfiReader extends Leb128Reader<CfiException> {
  private final byte[] bytes;
  private int position;
  private final int end;

  CfiReader(byte[] bytes) {
    this(bytes, 0, bytes.length);
  }

  CfiReader(byte[] bytes, int start, int end) {
    this.bytes = bytes;
    this.position = start;
    this.end = end;
  }

  boolean hasMore() {
    return position < end;
  }

  int position() {
    return position;
  }

  void seek(int newPosition) throws CfiException {
    if (newPosition < 0 || newPosition > end) {
      throw new CfiException(UnwindError.CFI_OUT_OF_BOUNDS,
          "branch to " + newPosition + " of " + end);
    }
    position = newPosition;
  }

  int u8() throws CfiException {
    need(1);
    return bytes[position++] & 0xff;
  }

  int u16() throws CfiException {
    need(2);
    int v = (bytes[position] & 0xff) | (bytes[position + 1] & 0xff) << 8;
    position += 2;
    return v;
  }

  long u32() throws CfiException {
    need(4);
    long v = 0;
    for (int i = 3; i >= 0; i--) {
      v = v << 8 | (bytes[position + i] & 0xff);
    }
    position += 4;
    return v;
  }

  long u64() throws CfiException {
    need(8);
    long v = 0;
    for (int i = 7; i >= 0; i--) {
      v = v << 8 | (bytes[position + i] & 0xff);
    }
    position += 8;
    return v;
  }

  @Override
  protected int nextByte() throws CfiException {
    return u8();
  }

  @Override
  protected CfiException tooLong() {
    return new CfiException(UnwindError.CFI_BAD_LEB128, "unterminated LEB128 at " + position);
  }

  /** A length-prefixed block (expressions), copied out. */
  byte[] block() throws CfiException {
    long length = uleb();
    if (length < 0 || length > end - position) {
      throw new CfiException(UnwindError.CFI_OUT_OF_BOUNDS, "block of " + length + " bytes");
    }
    byte[] out = new byte[(int) length];
    System.arraycopy(bytes, position, out, 0, out.length);
    position += out.length;
    return out;
  }

  private void need(int n) throws CfiException {
    if (end - position < n) {
      throw new CfiException(UnwindError.CFI_TRUNCATED, "need " + n + " bytes at " + position);
    }
  }
}
