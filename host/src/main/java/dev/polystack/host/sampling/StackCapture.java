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
  private final PagePool pagePool = new PagePool();

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
    try {
      length = pagePool.read(live, sp, buffer, pageAddresses, pages);
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
