package dev.polystack.host.sampling;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.memory.RemoteReadException;

/**
 * The top of a stopped thread's stack, copied with one read from just below the stack pointer
 * up: the only memory a native unwind needs in the common case, so the thread can be resumed
 * right after it and walked from the copy. The buffer is reused from sample to sample (one owner
 * thread, one walk at a time), so the stopped section allocates nothing for it.
 *
 * <p>The copy starts {@link #BELOW_SP} bytes under the stack pointer. A thread stopped in a
 * function's epilogue has popped callee-saved registers whose unwind rules (GCC emits no
 * .cfi_restore for the pops) still point at their slots, now just below the stack pointer; and a
 * leaf function keeps its locals in the 128-byte red zone there. Copied from the stack pointer,
 * those reads fell outside the copy, a large share of the walks that missed a page (measured in
 * docs/benchmarks.md, "Figures behind the code's choices").
 */
public final class StackCapture {
  /** The x86-64 System V red zone, which also covers an epilogue's popped registers. */
  static final int BELOW_SP = 128;

  private final ProcessMemory live;
  private final byte[] buffer;
  private long start;
  private int length;

  /**
   * @param bytes how much stack to copy per sample from the stack pointer up (bounded by the
   *     sampling options); 0 copies nothing
   */
  public StackCapture(ProcessMemory live, int bytes) {
    this.live = live;
    this.buffer = new byte[bytes == 0 ? 0 : bytes + BELOW_SP];
  }

  /**
   * Copies the buffer's size from {@link #BELOW_SP} under {@code sp} (from {@code sp} itself
   * when the stack mapping begins in between); a stack mapping that ends sooner gives a shorter
   * copy. Returns false when nothing could be read (the copy is then empty).
   */
  public boolean copy(long sp) {
    length = 0;
    start = sp;
    if (buffer.length == 0) {
      return true;
    }
    if (Long.compareUnsigned(sp, BELOW_SP) >= 0 && readAt(sp - BELOW_SP) > BELOW_SP) {
      return true;
    }
    return readAt(sp) > 0;
  }

  private int readAt(long address) {
    start = address;
    try {
      length = Math.max(0, live.read(address, buffer, 0, buffer.length));
    } catch (RemoteReadException e) {
      length = 0;
    }
    return length;
  }

  /** Pages read with the last {@link #copyWithPages}, by address. */
  private final java.util.Map<Long, byte[]> pages = new java.util.HashMap<>();
  private final PagePool pagePool = new PagePool();

  /**
   * Copies the stack as {@link #copy} and, in the same system call, whole pages the caller
   * expects the walk to read (see {@link PagePrefetch}). Returns false when the stack could not
   * be read.
   */
  public boolean copyWithPages(long sp, long[] pageAddresses) {
    pages.clear();
    if (pageAddresses.length == 0 || buffer.length == 0) {
      return copy(sp);
    }
    start = Long.compareUnsigned(sp, BELOW_SP) >= 0 ? sp - BELOW_SP : sp;
    length = 0;
    try {
      length = pagePool.read(live, start, buffer, pageAddresses, pages);
    } catch (RemoteReadException e) {
      length = 0;
      pages.clear();
    }
    if (length <= sp - start) {
      // The mapping begins between the two (or the stack is unreadable): as copy() would.
      pages.clear();
      return copy(sp);
    }
    return true;
  }

  /**
   * The thread's memory frozen at the last {@link #copyWithPages}: nothing is read live, except
   * stable reads (see {@link dev.polystack.plugin.api.RemoteMemory#stable}) from {@code
   * stableSource} when it is not null.
   */
  public SampleMemory snapshotMemory(ProcessMemory stableSource) {
    return SampleMemory.snapshot(start, buffer, length, pages, stableSource);
  }

  public long start() {
    return start;
  }

  public int length() {
    return length;
  }

  /**
   * The thread's memory for one walk: the copy first, {@code fallback} (page by page, bounded)
   * for anything outside it, or nothing else when {@code fallback} is null.
   */
  public SampleMemory memory(ProcessMemory fallback) {
    return new SampleMemory(fallback, start, buffer, length);
  }
}
