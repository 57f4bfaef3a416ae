package dev.polystack.host.unwind;

/** A bounded cursor over DWARF bytes; every overrun is a {@link CfiException}. */
final class CfiReader {
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
      throw new CfiException("cfi_out_of_bounds", "branch to " + newPosition + " of " + end);
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

  long uleb() throws CfiException {
    long result = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      int b = u8();
      if (shift < 64) {
        result |= (long) (b & 0x7f) << shift;
      }
      if ((b & 0x80) == 0) {
        return result;
      }
    }
    throw new CfiException("cfi_bad_leb128", "unterminated LEB128 at " + position);
  }

  long sleb() throws CfiException {
    long result = 0;
    int shift = 0;
    int b;
    do {
      b = u8();
      if (shift < 64) {
        result |= (long) (b & 0x7f) << shift;
      }
      shift += 7;
      if (shift > 70) {
        throw new CfiException("cfi_bad_leb128", "unterminated LEB128 at " + position);
      }
    } while ((b & 0x80) != 0);
    if (shift < 64 && (b & 0x40) != 0) {
      result |= -1L << shift;
    }
    return result;
  }

  /** A length-prefixed block (expressions), copied out. */
  byte[] block() throws CfiException {
    long length = uleb();
    if (length < 0 || length > end - position) {
      throw new CfiException("cfi_out_of_bounds", "block of " + length + " bytes");
    }
    byte[] out = new byte[(int) length];
    System.arraycopy(bytes, position, out, 0, out.length);
    position += out.length;
    return out;
  }

  private void need(int n) throws CfiException {
    if (end - position < n) {
      throw new CfiException("cfi_truncated", "need " + n + " bytes at " + position);
    }
  }
}
