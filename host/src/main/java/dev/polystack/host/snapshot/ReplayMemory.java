package dev.polystack.host.snapshot;

import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;

/**
 * Memory served from a {@link MemoryImage}: reads inside recorded ranges return the recorded
 * bytes, anything else fails like unmapped memory. One recorded read can be made to fail
 * ({@code injected}); the reads that ran into it are counted, so a test can prove the fault was
 * hit. Reads that touch neither a recorded range nor a recorded fault are counted as misses: a
 * faithful replay has none.
 */
public final class ReplayMemory implements RemoteMemory {
  private final MemoryImage image;
  private final MemoryImage.Read injected;
  private int injectedHits;
  private int misses;

  public ReplayMemory(MemoryImage image, MemoryImage.Read injected) {
    this.image = image;
    this.injected = injected;
  }

  @Override
  public synchronized int read(long address, byte[] dst, int offset, int length)
      throws MemoryReadException {
    if (length < 0 || length > MAX_READ) {
      throw new MemoryReadException(address, length, "length out of bounds");
    }
    int limit = length;
    if (injected != null && injected.overlaps(address, length)) {
      injectedHits++;
      if (Long.compareUnsigned(address, injected.address()) >= 0) {
        throw new MemoryReadException(address, length, "injected fault");
      }
      limit = (int) (injected.address() - address);
    }
    int n = limit == 0 ? 0 : image.copy(address, dst, offset, limit);
    if (n == 0) {
      if (!recordedFault(address, length)) {
        misses++;
      }
      throw new MemoryReadException(address, length, "not in the snapshot (unreadable)");
    }
    return n;
  }

  private boolean recordedFault(long address, int length) {
    for (MemoryImage.Read r : image.reads()) {
      if (r.fault() && r.overlaps(address, length)) {
        return true;
      }
    }
    return false;
  }

  /** Reads that ran into the injected fault. */
  public synchronized int injectedHits() {
    return injectedHits;
  }

  /** Reads outside everything the snapshot recorded (the replay diverged from the live walk). */
  public synchronized int misses() {
    return misses;
  }

  /** The host's view of the same memory (0 bytes for unreadable, as process_vm_readv). */
  public dev.polystack.host.memory.ProcessMemory asHost() {
    return new dev.polystack.host.memory.ProcessMemory() {
      @Override
      public int read(long address, byte[] dst, int off, int len) throws RemoteReadException {
        checkLength(address, len);
        try {
          return ReplayMemory.this.read(address, dst, off, len);
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
