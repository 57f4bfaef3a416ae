package dev.polystack.host.elf;

/**
 * LEB128 decoding (DWARF's variable-length integers) for the byte cursors that read ELF
 * sections ({@link ByteView}) and CFI programs ({@code unwind.CfiReader}): one implementation,
 * with each cursor's own byte source and failure. A value has at most 10 bytes (64 bits); bits
 * beyond 64 are dropped, and a longer encoding is an error.
 *
 * @param <E> the cursor's exception for overruns and over-long encodings
 */
public abstract class Leb128Reader<E extends Exception> {
  /** The longest encoding of a 64-bit value. */
  public static final int MAX_BYTES = 10;

  /** The next byte (0..255), or E past the end. */
  protected abstract int nextByte() throws E;

  /** The failure for an encoding longer than {@link #MAX_BYTES}. */
  protected abstract E tooLong();

  /** An unsigned LEB128 value. */
  public final long uleb() throws E {
    return read(false);
  }

  /** A signed LEB128 value, sign-extended from its last byte. */
  public final long sleb() throws E {
    return read(true);
  }

  private long read(boolean signed) throws E {
    long result = 0;
    for (int shift = 0; shift < 7 * MAX_BYTES; shift += 7) {
      int b = nextByte();
      if (shift < 64) {
        result |= (long) (b & 0x7f) << shift;
      }
      if ((b & 0x80) == 0) {
        if (signed && shift + 7 < 64 && (b & 0x40) != 0) {
          result |= -1L << (shift + 7);
        }
        return result;
      }
    }
    throw tooLong();
  }
}
