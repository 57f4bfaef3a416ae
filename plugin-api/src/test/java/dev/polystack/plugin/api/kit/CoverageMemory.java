package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;

/**
 * A thread's memory as a walk in bpf mode would see it if every read it makes had to come from
 * the tick: recorded bytes inside what the tick copied ({@link TickCopies}), and through
 * {@link #stable()} every recorded byte. A read of recorded bytes outside the copies is what a
 * plan misses (the host would read it live, after the tick): it fails here, and the first one
 * is kept with the frame that made it. Used by one thread at a time.
 */
final class CoverageMemory implements RemoteMemory {
  /** The first read outside the copies: where, how long, in which frame. */
  record Miss(long address, int length, String frame) {}

  private final MemoryBlob blob;
  private final TickCopies copies;
  private final RemoteMemory stable = new Stable();
  private String frame = "";
  private Miss firstMiss;
  private long coveredReads;
  private long stableReads;

  CoverageMemory(MemoryBlob blob, TickCopies copies) {
    this.blob = blob;
    this.copies = copies;
  }

  /** Names the frame the reads that follow belong to, and forgets the last frame's miss. */
  void frame(String name) {
    frame = name;
    firstMiss = null;
  }

  Miss firstMiss() {
    return firstMiss;
  }

  long coveredReads() {
    return coveredReads;
  }

  long stableReads() {
    return stableReads;
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length) throws MemoryReadException {
    check(dst, offset, length, address);
    long covered = Math.min(length, copies.coveredFrom(address));
    int recorded = length == 0 ? 0 : blob.copy(address, dst, offset, length);
    if (covered < recorded) {
      // Recorded bytes the tick did not copy: the live walk read them, the plan missed them.
      if (firstMiss == null) {
        firstMiss = new Miss(address + covered, (int) (recorded - covered), frame);
      }
      if (covered == 0) {
        throw new MemoryReadException(address, length, "conformance kit: not copied at the"
            + " tick (outside the stack window and the capture plan's copies)");
      }
      return (int) covered;
    }
    if (recorded == 0) {
      throw new MemoryReadException(address, length, "not in the snapshot (unreadable)");
    }
    coveredReads++;
    return recorded;
  }

  @Override
  public RemoteMemory stable() {
    return stable;
  }

  private static void check(byte[] dst, int offset, int length, long address)
      throws MemoryReadException {
    if (length < 0 || length > MAX_READ || offset < 0 || offset + length > dst.length) {
      throw new MemoryReadException(address, length, "length out of bounds");
    }
  }

  /** Reads of objects that do not change while reachable: any recorded byte. */
  private final class Stable implements RemoteMemory {
    @Override
    public int read(long address, byte[] dst, int offset, int length)
        throws MemoryReadException {
      check(dst, offset, length, address);
      int n = length == 0 ? 0 : blob.copy(address, dst, offset, length);
      if (n == 0) {
        throw new MemoryReadException(address, length, "not in the snapshot (unreadable)");
      }
      stableReads++;
      return n;
    }
  }
}
