package dev.polystack.host.probes;

import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;
import java.util.ArrayList;
import java.util.List;

/**
 * The few regions a BPF handler copied from a thread at a hit, as memory: reads inside a copied
 * region are served, any other read fails (the thread ran on, so a live read would race).
 */
final class CopiedMemory implements RemoteMemory {
  private record Region(long address, byte[] bytes) {}

  private final List<Region> regions = new ArrayList<>(2);

  void put(long address, byte[] bytes) {
    regions.add(new Region(address, bytes));
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length) throws MemoryReadException {
    if (length < 0 || length > MAX_READ) {
      throw new MemoryReadException(address, length, "length out of bounds");
    }
    for (Region r : regions) {
      long skip = address - r.address();
      if (skip >= 0 && skip < r.bytes().length) {
        int n = (int) Math.min(length, r.bytes().length - skip);
        System.arraycopy(r.bytes(), (int) skip, dst, offset, n);
        return n;
      }
    }
    throw new MemoryReadException(address, length, "not copied at the return");
  }
}
