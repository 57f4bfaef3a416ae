package dev.polystack.plugin.api;

/**
 * Little-endian decoding helpers for plug-ins that parse target memory (x86-64 only).
 *
 * @since 1.0
 */
public final class Bytes {
  private Bytes() {}

  public static long getLong(byte[] b, int off) {
    return (b[off] & 0xffL)
        | (b[off + 1] & 0xffL) << 8
        | (b[off + 2] & 0xffL) << 16
        | (b[off + 3] & 0xffL) << 24
        | (b[off + 4] & 0xffL) << 32
        | (b[off + 5] & 0xffL) << 40
        | (b[off + 6] & 0xffL) << 48
        | (b[off + 7] & 0xffL) << 56;
  }

  public static int getInt(byte[] b, int off) {
    return (b[off] & 0xff)
        | (b[off + 1] & 0xff) << 8
        | (b[off + 2] & 0xff) << 16
        | (b[off + 3] & 0xff) << 24;
  }

  public static int getUnsignedShort(byte[] b, int off) {
    return (b[off] & 0xff) | (b[off + 1] & 0xff) << 8;
  }
}
