package dev.polystack.host.sampling;

import dev.polystack.host.memory.RemoteMemory;
import dev.polystack.host.memory.RemoteReadException;

/**
 * The top of a stopped thread's stack, copied with one read from the stack pointer up: the only
 * memory a native unwind needs in the common case, so the thread can be resumed right after it
 * and walked from the copy. The buffer is reused from sample to sample (one owner thread, one
 * walk at a time), so the stopped section allocates nothing for it.
 */
final class StackCapture {
  private final RemoteMemory live;
  private final byte[] buffer;
  private long start;
  private int length;

  /** @param bytes how much stack to copy per sample (bounded by the sampling options) */
  StackCapture(RemoteMemory live, int bytes) {
    this.live = live;
    this.buffer = new byte[bytes];
  }

  /**
   * Copies up to the buffer's size from {@code sp}; a stack mapping that ends sooner gives a
   * shorter copy. Returns false when nothing could be read (the copy is then empty).
   */
  boolean copy(long sp) {
    start = sp;
    length = 0;
    if (buffer.length == 0) {
      return true;
    }
    try {
      length = Math.max(0, live.read(sp, buffer, 0, buffer.length));
    } catch (RemoteReadException e) {
      length = 0;
    }
    return length > 0;
  }

  /** Pages read with the last {@link #copyWithPages}, by address. */
  private final java.util.Map<Long, byte[]> pages = new java.util.HashMap<>();
  /**
   * Page buffers reused from sample to sample: the walk of one sample's copy ends before the
   * next copy, and fresh buffers were a quarter of what sampling allocated (so of how often the
   * JVM's collector ran, which can hold a stopped target until it is done).
   */
  private final byte[][] pagePool = new byte[PagePrefetch.MAX_PAGES][];

  /**
   * Copies the stack as {@link #copy} and, in the same system call, whole pages the caller
   * expects the walk to read (see {@link PagePrefetch}). Returns false when the stack could not
   * be read.
   */
  boolean copyWithPages(long sp, long[] pageAddresses) {
    pages.clear();
    if (pageAddresses.length == 0 || buffer.length == 0) {
      return copy(sp);
    }
    start = sp;
    length = 0;
    int n = Math.min(pageAddresses.length, PagePrefetch.MAX_PAGES);
    long[] at = new long[n + 1];
    byte[][] into = new byte[n + 1][];
    at[0] = sp;
    into[0] = buffer;
    for (int i = 0; i < n; i++) {
      at[i + 1] = pageAddresses[i];
      if (pagePool[i] == null) {
        pagePool[i] = new byte[SampleMemory.PAGE];
      }
      into[i + 1] = pagePool[i];
    }
    try {
      int[] got = live.readScattered(at, into);
      length = got[0];
      for (int i = 0; i < n; i++) {
        pages.put(at[i + 1], got[i + 1] == SampleMemory.PAGE ? into[i + 1] : new byte[0]);
      }
    } catch (RemoteReadException e) {
      length = 0;
      pages.clear();
    }
    return length > 0;
  }

  /**
   * The thread's memory frozen at the last {@link #copyWithPages}: nothing is read live, except
   * stable reads (see {@link dev.polystack.plugin.api.RemoteMemory#stable}) from {@code
   * stableSource} when it is not null.
   */
  SampleMemory snapshotMemory(RemoteMemory stableSource) {
    return SampleMemory.snapshot(start, buffer, length, pages, stableSource);
  }

  long start() {
    return start;
  }

  int length() {
    return length;
  }

  /**
   * The thread's memory for one walk: the copy first, {@code fallback} (page by page, bounded)
   * for anything outside it, or nothing else when {@code fallback} is null.
   */
  SampleMemory memory(RemoteMemory fallback) {
    return new SampleMemory(fallback, start, buffer, length);
  }
}
