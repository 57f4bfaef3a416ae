package dev.polystack.plugin.api.kit;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * One recorded memory blob of a snapshot (docs/snapshot-format.md): the byte ranges the live
 * walk read and the reads it made, in order, with how many bytes each got (0: it failed).
 */
final class MemoryBlob {
  static final int MAGIC = 0x50534d31;
  /** Bounds for untrusted blobs: no case needs more. */
  private static final int MAX_ENTRIES = 1 << 20;

  record Range(long address, byte[] bytes) {}

  record Read(long address, int length, int got) {}

  private final List<Range> ranges;
  private final List<Read> reads;

  private MemoryBlob(List<Range> ranges, List<Read> reads) {
    this.ranges = List.copyOf(ranges);
    this.reads = List.copyOf(reads);
  }

  /** Recorded bytes with no read log, as a test lays them out. */
  static MemoryBlob of(List<Range> ranges) {
    return new MemoryBlob(ranges, List.of());
  }

  static MemoryBlob parse(byte[] data, String entry) {
    try {
      ByteBuffer b = ByteBuffer.wrap(data); // big-endian, as the format says
      if (b.getInt() != MAGIC) {
        throw new IllegalArgumentException(entry + ": not a PSM1 memory blob");
      }
      int n = count(b.getInt(), entry);
      List<Range> ranges = new ArrayList<>(n);
      long lastEnd = 0;
      for (int i = 0; i < n; i++) {
        long address = b.getLong();
        int length = b.getInt();
        if (length <= 0 || length > b.remaining()) {
          throw new IllegalArgumentException(entry + ": range " + i + " has a bad length");
        }
        if (i > 0 && Long.compareUnsigned(address, lastEnd) < 0) {
          throw new IllegalArgumentException(entry + ": ranges overlap or are not sorted");
        }
        byte[] bytes = new byte[length];
        b.get(bytes);
        ranges.add(new Range(address, bytes));
        lastEnd = address + length;
      }
      int m = count(b.getInt(), entry);
      List<Read> reads = new ArrayList<>(m);
      for (int i = 0; i < m; i++) {
        long address = b.getLong();
        int length = b.getInt();
        int got = b.getInt();
        if (length < 0 || got < 0 || got > length) {
          throw new IllegalArgumentException(entry + ": read " + i + " is inconsistent");
        }
        reads.add(new Read(address, length, got));
      }
      return new MemoryBlob(ranges, reads);
    } catch (java.nio.BufferUnderflowException e) {
      throw new IllegalArgumentException(entry + ": truncated memory blob", e);
    }
  }

  private static int count(int n, String entry) {
    if (n < 0 || n > MAX_ENTRIES) {
      throw new IllegalArgumentException(entry + ": implausible entry count " + n);
    }
    return n;
  }

  /** Copies recorded bytes at {@code address}, up to the end of the range that holds it. */
  int copy(long address, byte[] dst, int offset, int length) {
    int lo = 0;
    int hi = ranges.size() - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      Range r = ranges.get(mid);
      if (Long.compareUnsigned(address, r.address()) < 0) {
        hi = mid - 1;
      } else if (Long.compareUnsigned(address - r.address(), r.bytes().length) >= 0) {
        lo = mid + 1;
      } else {
        int at = (int) (address - r.address());
        int n = Math.min(length, r.bytes().length - at);
        System.arraycopy(r.bytes(), at, dst, offset, n);
        return n;
      }
    }
    return 0;
  }

  List<Read> reads() {
    return reads;
  }
}
