package dev.polystack.host.sampling;

import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.host.snapshot.MemoryImage;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Recorded target memory (a snapshot's {@link MemoryImage}) with corruption laid over it for one
 * case: patches replace bytes wherever a read covers them, holes make a range unreadable (a read
 * starting inside fails, a read running into one is cut short, as at the end of a mapping).
 * Counts every read and the largest length asked for, so a test can bound what one walk does.
 * In discovery mode it also notes which reads the LuaJIT plug-in itself made.
 */
final class CorruptibleMemory implements RemoteMemory {
  /** Bytes that replace the recorded ones at {@code address}. */
  record Patch(long address, byte[] bytes) {}

  /** An unreadable range {@code [start, end)}. */
  record Hole(long start, long end) {}

  /** A read the plug-in made: what corruption aims at. */
  record Span(long address, int length) {}

  private final MemoryImage image;
  private List<Patch> patches = List.of();
  private List<Hole> holes = List.of();
  private boolean discovering;
  private final Set<Span> pluginReads = new LinkedHashSet<>();
  private long reads;
  private int maxLength;

  CorruptibleMemory(MemoryImage image) {
    this.image = image;
  }

  MemoryImage image() {
    return image;
  }

  synchronized void corrupt(List<Patch> patches, List<Hole> holes) {
    this.patches = List.copyOf(patches);
    this.holes = List.copyOf(holes);
  }

  synchronized boolean corrupted() {
    return !patches.isEmpty() || !holes.isEmpty();
  }

  synchronized void clear() {
    corrupt(List.of(), List.of());
  }

  /** Reads and largest length since the last call, then reset. */
  synchronized long[] takeCounts() {
    long[] out = {reads, maxLength};
    reads = 0;
    maxLength = 0;
    return out;
  }

  synchronized void discover(boolean on) {
    discovering = on;
  }

  /** The successful reads made from LuaJIT plug-in code while discovering. */
  synchronized List<Span> pluginReads() {
    return new ArrayList<>(pluginReads);
  }

  @Override
  public synchronized int read(long address, byte[] dst, int offset, int length)
      throws MemoryReadException {
    if (length < 0 || length > MAX_READ) {
      throw new MemoryReadException(address, length, "length out of bounds");
    }
    reads++;
    maxLength = Math.max(maxLength, length);
    int limit = length;
    for (Hole h : holes) {
      if (overlaps(h.start(), h.end() - h.start(), address, length)) {
        if (Long.compareUnsigned(address, h.start()) >= 0) {
          throw new MemoryReadException(address, length, "corrupted: unmapped");
        }
        limit = (int) Math.min(limit, h.start() - address);
      }
    }
    int n = limit == 0 ? 0 : image.copy(address, dst, offset, limit);
    if (n == 0) {
      throw new MemoryReadException(address, length, "not in the snapshot (unreadable)");
    }
    for (Patch p : patches) {
      long from = Math.max(p.address(), address);
      long to = Math.min(p.address() + p.bytes().length, address + n);
      if (from < to) {
        System.arraycopy(p.bytes(), (int) (from - p.address()), dst,
            offset + (int) (from - address), (int) (to - from));
      }
    }
    if (discovering && fromPlugin()) {
      pluginReads.add(new Span(address, n));
    }
    return n;
  }

  private static boolean fromPlugin() {
    return java.lang.StackWalker.getInstance().walk(frames -> frames.anyMatch(
        f -> f.getClassName().startsWith("dev.polystack.luajit.")));
  }

  private static boolean overlaps(long a, long aLen, long b, long bLen) {
    return Long.compareUnsigned(b, a + Math.max(aLen, 1)) < 0
        && Long.compareUnsigned(a, b + Math.max(bLen, 1)) < 0;
  }

  /** The host's view of the same memory (0 bytes for unreadable, as process_vm_readv). */
  dev.polystack.host.memory.ProcessMemory asHost() {
    return new dev.polystack.host.memory.ProcessMemory() {
      @Override
      public int read(long address, byte[] dst, int off, int len) throws RemoteReadException {
        checkLength(address, len);
        try {
          return CorruptibleMemory.this.read(address, dst, off, len);
        } catch (MemoryReadException e) {
          return 0;
        }
      }

      @Override
      public int maxReadBytes() {
        return RemoteMemory.MAX_READ * 16;
      }
    };
  }
}
