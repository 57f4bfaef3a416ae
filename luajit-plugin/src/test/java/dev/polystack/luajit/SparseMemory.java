package dev.polystack.luajit;

import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;
import java.util.Map;
import java.util.TreeMap;

/**
 * Target memory built byte by byte for the walk's unit tests: regions at chosen addresses, little
 * endian like x86-64, everything else unmapped; counts reads so a test can bound them.
 */
final class SparseMemory implements RemoteMemory {
  final TreeMap<Long, byte[]> regions = new TreeMap<>();
  long reads;

  /** A zeroed region of {@code size} bytes mapped at {@code address}. */
  byte[] region(long address, int size) {
    byte[] b = new byte[size];
    regions.put(address, b);
    return b;
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length) throws MemoryReadException {
    reads++;
    Map.Entry<Long, byte[]> e = regions.floorEntry(address);
    if (e == null || address - e.getKey() >= e.getValue().length) {
      throw new MemoryReadException(address, length, "unmapped");
    }
    int n = (int) Math.min(length, e.getValue().length - (address - e.getKey()));
    System.arraycopy(e.getValue(), (int) (address - e.getKey()), dst, offset, n);
    return n;
  }

  /** Writes the low {@code width} bytes of {@code v} at {@code b[at]}, little endian. */
  static void put(byte[] b, int at, long v, int width) {
    for (int i = 0; i < width; i++) {
      b[at + i] = (byte) (v >>> (8 * i));
    }
  }
}
