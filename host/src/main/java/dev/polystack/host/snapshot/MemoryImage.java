package dev.polystack.host.snapshot;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;

/**
 * Target memory as a walk read it: the bytes of every range that was read (overlapping and
 * adjacent reads coalesced) and the list of distinct reads, including those that failed. A
 * replay serves reads from the ranges only; anything else fails as unmapped memory would.
 */
public final class MemoryImage {

  /**
   * One read as the live walk made it.
   *
   * @param got bytes the target returned; 0 means the read failed (a fault)
   */
  public record Read(long address, int length, int got) {
    public boolean fault() {
      return got == 0;
    }

    /** Whether a read of {@code [address, address + length)} overlaps this one. */
    boolean overlaps(long at, int len) {
      return Long.compareUnsigned(at, address + Math.max(length, 1)) < 0
          && Long.compareUnsigned(address, at + Math.max(len, 1)) < 0;
    }

    @Override
    public String toString() {
      return "0x" + Long.toHexString(address) + "+" + length + (fault() ? " (fault)" : "");
    }
  }

  public static final MemoryImage EMPTY = new MemoryImage(new TreeMap<>(Long::compareUnsigned),
      List.of());

  private final NavigableMap<Long, byte[]> ranges;
  private final List<Read> reads;

  MemoryImage(NavigableMap<Long, byte[]> ranges, List<Read> reads) {
    this.ranges = ranges;
    this.reads = List.copyOf(reads);
  }

  /** Coalesced ranges by start address (unsigned order); do not modify. */
  public NavigableMap<Long, byte[]> ranges() {
    return ranges;
  }

  /** Distinct reads in the order they were first made. */
  public List<Read> reads() {
    return reads;
  }

  /** Total bytes held. */
  public long size() {
    return ranges.values().stream().mapToLong(b -> b.length).sum();
  }

  /**
   * Copies up to {@code length} recorded bytes at {@code address}, stopping at the end of the
   * recorded range; returns 0 when {@code address} was never read successfully.
   */
  public int copy(long address, byte[] dst, int offset, int length) {
    Map.Entry<Long, byte[]> e = ranges.floorEntry(address);
    if (e == null) {
      return 0;
    }
    long index = address - e.getKey();
    byte[] bytes = e.getValue();
    if (index < 0 || index >= bytes.length) {
      return 0;
    }
    int n = (int) Math.min(length, bytes.length - index);
    System.arraycopy(bytes, (int) index, dst, offset, n);
    return n;
  }

  /** Collects reads while a live walk runs; thread-safe. */
  public static final class Recorder {
    private final NavigableMap<Long, byte[]> ranges = new TreeMap<>(Long::compareUnsigned);
    private final Set<Read> reads = new LinkedHashSet<>();

    /** {@code got} bytes at {@code address} were read (of {@code length} asked for). */
    public synchronized void data(long address, int length, byte[] src, int offset, int got) {
      if (got <= 0) {
        fault(address, length);
        return;
      }
      reads.add(new Read(address, length, got));
      byte[] bytes = new byte[got];
      System.arraycopy(src, offset, bytes, 0, got);
      merge(address, bytes);
    }

    /** Nothing at {@code address} could be read. */
    public synchronized void fault(long address, int length) {
      reads.add(new Read(address, length, 0));
    }

    private void merge(long at, byte[] bytes) {
      long first = at;
      long end = at + bytes.length;
      // Every range that overlaps or touches [at, end) joins the new one.
      Map.Entry<Long, byte[]> before = ranges.floorEntry(at);
      if (before != null
          && Long.compareUnsigned(before.getKey() + before.getValue().length, at) >= 0) {
        first = before.getKey();
      }
      List<Map.Entry<Long, byte[]>> joined = new ArrayList<>();
      for (Map.Entry<Long, byte[]> e : ranges.tailMap(first, true).entrySet()) {
        if (Long.compareUnsigned(e.getKey(), end) > 0) {
          break;
        }
        joined.add(e);
        long eEnd = e.getKey() + e.getValue().length;
        if (Long.compareUnsigned(eEnd, end) > 0) {
          end = eEnd;
        }
      }
      byte[] out = new byte[(int) (end - first)];
      for (Map.Entry<Long, byte[]> e : joined) {
        System.arraycopy(e.getValue(), 0, out, (int) (e.getKey() - first), e.getValue().length);
      }
      joined.forEach(e -> ranges.remove(e.getKey()));
      System.arraycopy(bytes, 0, out, (int) (at - first), bytes.length);
      ranges.put(first, out);
    }

    public synchronized MemoryImage image() {
      NavigableMap<Long, byte[]> copy = new TreeMap<>(Long::compareUnsigned);
      copy.putAll(ranges);
      return new MemoryImage(copy, new ArrayList<>(reads));
    }
  }
}
