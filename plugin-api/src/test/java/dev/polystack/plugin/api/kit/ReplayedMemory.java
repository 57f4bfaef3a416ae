package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;
import java.util.List;

/**
 * Target memory served from a recorded blob, deterministically: recorded bytes inside recorded
 * ranges, a failure anywhere else (as unmapped memory). It counts every read and every byte
 * asked for and refuses reads past its bounds (the walk then sees failures and must still end),
 * and it can inject one {@link ReadFault}. Thread safe: the kit shares one across concurrent
 * walks.
 *
 * <p>Reads through {@link #stable()} are served from every blob of the case when this thread's
 * own lacks them, as the host serves them from the live process: a plug-in may read a stable
 * object once per process, so only the thread whose live walk came first recorded it. They are
 * counted and faulted with the thread's other reads.
 */
final class ReplayedMemory implements RemoteMemory {
  private final MemoryBlob blob;
  private final List<MemoryBlob> stableBlobs;
  private final RemoteMemory stableView = new RemoteMemory() {
    @Override
    public int read(long address, byte[] dst, int offset, int length)
        throws MemoryReadException {
      return ReplayedMemory.this.read(address, dst, offset, length, true);
    }
  };
  private final ReadFault fault;
  private final long maxReads;
  private final long maxBytes;
  private long reads;
  private long bytes;
  private boolean boundExceeded;
  private boolean faultHit;

  ReplayedMemory(MemoryBlob blob, ReadFault fault, long maxReads, long maxBytes) {
    this(blob, List.of(), fault, maxReads, maxBytes);
  }

  /** @param stableBlobs where stable reads this blob lacks are served from, in order */
  ReplayedMemory(MemoryBlob blob, List<MemoryBlob> stableBlobs, ReadFault fault, long maxReads,
      long maxBytes) {
    this.blob = blob;
    this.stableBlobs = List.copyOf(stableBlobs);
    this.fault = fault;
    this.maxReads = maxReads;
    this.maxBytes = maxBytes;
  }

  @Override
  public RemoteMemory stable() {
    return stableBlobs.isEmpty() ? this : stableView;
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length)
      throws MemoryReadException {
    return read(address, dst, offset, length, false);
  }

  private synchronized int read(long address, byte[] dst, int offset, int length,
      boolean stable) throws MemoryReadException {
    if (length < 0 || length > MAX_READ || offset < 0 || offset + length > dst.length) {
      throw new MemoryReadException(address, length, "length out of bounds");
    }
    long index = reads++;
    bytes += length;
    if (reads > maxReads || bytes > maxBytes) {
      boundExceeded = true;
      throw new MemoryReadException(address, length, "conformance kit: read bound exceeded");
    }
    int limit = length;
    if (fault != null && index == fault.index()) {
      faultHit = true;
      if (fault.fails() || length <= 1) {
        throw new MemoryReadException(address, length, "injected fault");
      }
      limit = Math.min(length - 1, fault.keep());
    }
    int n = limit == 0 ? 0 : blob.copy(address, dst, offset, limit);
    for (int i = 0; n == 0 && stable && limit > 0 && i < stableBlobs.size(); i++) {
      n = stableBlobs.get(i).copy(address, dst, offset, limit);
    }
    if (n == 0) {
      throw new MemoryReadException(address, length, "not in the snapshot (unreadable)");
    }
    return n;
  }

  synchronized long reads() {
    return reads;
  }

  synchronized long bytes() {
    return bytes;
  }

  synchronized boolean boundExceeded() {
    return boundExceeded;
  }

  synchronized boolean faultHit() {
    return faultHit;
  }
}
