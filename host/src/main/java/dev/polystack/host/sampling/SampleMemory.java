package dev.polystack.host.sampling;

import dev.polystack.host.memory.RemoteMemory;
import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.plugin.api.MemoryReadException;
import java.util.HashMap;
import java.util.Map;

/**
 * Target memory as one sample sees it: reads go through a per-sample page cache, filled with one
 * process_vm_readv per page, so an unwinder that reads the stack word by word costs a handful of
 * system calls. With a stack copy from perf_event the copy is served first and nothing else is
 * read from the (running) target unless the walk leaves the copy.
 */
final class SampleMemory implements dev.polystack.plugin.api.RemoteMemory {
  static final int PAGE = 4096;

  /** Bounds what one sample may pull from the target: 4 MiB. */
  static final int MAX_PAGES = 1024;

  private static final byte[] UNREADABLE = new byte[0];

  private final RemoteMemory live;
  private final long copyStart;
  private final byte[] copy;
  private final int copyLength;
  private final Map<Long, byte[]> pages = new HashMap<>();
  private int liveReads;

  /** @param live the target's memory, or null when nothing but the copy may be read */
  SampleMemory(RemoteMemory live, long copyStart, byte[] copy, int copyLength) {
    this.live = live;
    this.copyStart = copyStart;
    this.copy = copy;
    this.copyLength = copyLength;
  }

  static SampleMemory live(RemoteMemory live) {
    return new SampleMemory(live, 0, new byte[0], 0);
  }

  /** Reads a range of pages at once, e.g. the top of the stack right after a thread stops. */
  void prefetch(long address, int length) {
    if (live == null || length <= 0) {
      return;
    }
    long first = address & -PAGE;
    long end = address + length;
    int count = (int) Math.min(MAX_PAGES, ((end - first) + PAGE - 1) / PAGE);
    byte[] buffer = new byte[count * PAGE];
    int n;
    try {
      n = live.read(first, buffer, 0, buffer.length);
      liveReads++;
    } catch (RemoteReadException e) {
      return;
    }
    for (int i = 0; i < count && pages.size() < MAX_PAGES; i++) {
      long page = first + (long) i * PAGE;
      if ((long) (i + 1) * PAGE <= n) {
        byte[] p = new byte[PAGE];
        System.arraycopy(buffer, i * PAGE, p, 0, PAGE);
        pages.put(page, p);
      }
    }
  }

  int liveReads() {
    return liveReads;
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length) throws MemoryReadException {
    if (length < 0 || length > MAX_READ) {
      throw new MemoryReadException(address, length, "length out of bounds");
    }
    int done = 0;
    while (done < length) {
      long at = address + done;
      int n = fromCopy(at, dst, offset + done, length - done);
      if (n == 0) {
        n = fromPage(at, dst, offset + done, length - done);
      }
      if (n == 0) {
        break;
      }
      done += n;
    }
    if (done == 0 && length > 0) {
      throw new MemoryReadException(address, length, "unreadable");
    }
    return done;
  }

  private int fromCopy(long at, byte[] dst, int offset, int length) {
    long index = at - copyStart;
    if (copyLength == 0 || index < 0 || index >= copyLength) {
      return 0;
    }
    int n = (int) Math.min(length, copyLength - index);
    System.arraycopy(copy, (int) index, dst, offset, n);
    return n;
  }

  private int fromPage(long at, byte[] dst, int offset, int length) {
    if (live == null) {
      return 0;
    }
    long page = at & -PAGE;
    byte[] bytes = pages.get(page);
    if (bytes == null) {
      if (pages.size() >= MAX_PAGES) {
        return 0;
      }
      bytes = new byte[PAGE];
      int n;
      try {
        n = live.read(page, bytes, 0, PAGE);
        liveReads++;
      } catch (RemoteReadException e) {
        n = 0;
      }
      if (n < PAGE) {
        bytes = UNREADABLE; // pages are mapped whole: a short read means the page is not there
      }
      pages.put(page, bytes);
    }
    if (bytes == UNREADABLE) {
      return 0;
    }
    int index = (int) (at - page);
    int n = Math.min(length, PAGE - index);
    System.arraycopy(bytes, index, dst, offset, n);
    return n;
  }
}
