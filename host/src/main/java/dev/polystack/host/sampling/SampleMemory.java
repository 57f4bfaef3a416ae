package dev.polystack.host.sampling;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.MemoryReadException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * Target memory as one sample sees it: the stack copy (taken while the thread was stopped, or by
 * perf_event) is served first; anything outside it goes through a per-sample page cache, filled
 * with one process_vm_readv per page, so a walk that reads word by word costs a handful of system
 * calls. Once the thread runs again such reads are racy; callers count them.
 */
public final class SampleMemory implements dev.polystack.plugin.api.RemoteMemory {
  public static final int PAGE = 4096;

  /** Bounds what one sample may pull from the target: 4 MiB. */
  public static final int MAX_PAGES = 1024;

  private static final byte[] UNREADABLE = new byte[0];

  private final ProcessMemory live;
  private final long copyStart;
  private final byte[] copy;
  private final int copyLength;
  private final Map<Long, byte[]> pages = new HashMap<>();
  /** The page read last: walks read neighbouring words, and a map lookup boxes its key. */
  private long lastPage = -1;
  private byte[] lastBytes;
  private int liveReads;

  /**
   * In snapshot mode, where {@link #stable()} reads may go when the snapshot lacks their page:
   * the live process, or null.
   */
  private ProcessMemory stableSource;
  /** Pages read live for {@link #stable()}; kept apart so no other read ever sees them. */
  private Map<Long, byte[]> stablePages;
  private int stableLiveReads;
  private final dev.polystack.plugin.api.RemoteMemory stableView = this::readStable;

  /** Pages a read wanted but could not have, in snapshot mode (see {@link #snapshot}). */
  private Set<Long> missed;
  /** Snapshot pages a read used, in snapshot mode. */
  private Set<Long> used;

  /** @param live the target's memory, or null when nothing but the copy may be read */
  public SampleMemory(ProcessMemory live, long copyStart, byte[] copy, int copyLength) {
    this.live = live;
    this.copyStart = copyStart;
    this.copy = copy;
    this.copyLength = copyLength;
  }

  /**
   * Memory of a thread that runs again, frozen at its stop: the stack copy plus whole pages read
   * together with it, nothing live. A read of any other page fails and the page is remembered
   * ({@link #missedPages}), so the caller can discard the walk and ask for the page next time.
   *
   * @param pages page address to contents (a page that could not be read maps to an empty array)
   * @param stableSource where {@link #stable()} reads of pages the snapshot lacks go (the live
   *     process), or null to treat them like any other read
   */
  static SampleMemory snapshot(long copyStart, byte[] copy, int copyLength,
      Map<Long, byte[]> pages, ProcessMemory stableSource) {
    SampleMemory m = new SampleMemory(null, copyStart, copy, copyLength);
    m.stableSource = stableSource;
    m.stablePages = new HashMap<>();
    pages.forEach((page, bytes) -> m.pages.put(page, bytes.length == PAGE ? bytes : UNREADABLE));
    m.missed = new LinkedHashSet<>();
    m.used = new HashSet<>();
    return m;
  }

  /**
   * Memory of a thread that never stopped (perf mode), for a runtime walk: the stack copy the
   * kernel took at the tick, then pages read together a moment after it (see {@link
   * PagePrefetch}), then the live process page by page. One read of every page the walk is
   * expected to need shows the runtime's structures at one instant, close to the tick, where
   * page-by-page reads spread a walk over its own duration. Pages read live are reported by
   * {@link #missedPages}, pages used by {@link #pagesRead}, so the set can be learned.
   *
   * @param pages page address to contents (a page that could not be read maps to an empty array)
   */
  public static SampleMemory prefetched(ProcessMemory live, long copyStart, byte[] copy,
      int copyLength, Map<Long, byte[]> pages) {
    SampleMemory m = new SampleMemory(live, copyStart, copy, copyLength);
    pages.forEach((page, bytes) -> m.pages.put(page, bytes.length == PAGE ? bytes : UNREADABLE));
    m.missed = new LinkedHashSet<>();
    m.used = new HashSet<>();
    return m;
  }

  @Override
  public dev.polystack.plugin.api.RemoteMemory stable() {
    return stableSource == null ? this : stableView;
  }

  /** Pages {@link #stable()} read from the live process because the snapshot lacked them. */
  int stableLiveReads() {
    return stableLiveReads;
  }

  /**
   * Pages the walk needed beyond the snapshot (prefetched mode: read live for it); empty when it
   * had all it read.
   */
  public Set<Long> missedPages() {
    return missed == null ? Set.of() : missed;
  }

  /** Every page this sample read outside the stack copy (live, or from the snapshot). */
  public Set<Long> pagesRead() {
    return Set.copyOf(used != null ? used : pages.keySet());
  }

  /** System calls made for reads outside the copy (each fills one page of the cache). */
  public int liveReads() {
    return liveReads;
  }

  /**
   * A word without the array the default method allocates: plug-in walks read hundreds of words
   * per sample while the thread is stopped, nearly all from the copy or a page already cached.
   */
  @Override
  public long readLong(long address) throws MemoryReadException {
    long index = address - copyStart;
    if (index >= 0 && index <= copyLength - 8L) {
      return Bytes.getLong(copy, (int) index);
    }
    byte[] page = cachedPage(address);
    int at = (int) (address & (PAGE - 1));
    if (page != null && at <= PAGE - 8) {
      return Bytes.getLong(page, at);
    }
    return dev.polystack.plugin.api.RemoteMemory.super.readLong(address);
  }

  @Override
  public int readInt(long address) throws MemoryReadException {
    long index = address - copyStart;
    if (index >= 0 && index <= copyLength - 4L) {
      return Bytes.getInt(copy, (int) index);
    }
    byte[] page = cachedPage(address);
    int at = (int) (address & (PAGE - 1));
    if (page != null && at <= PAGE - 4) {
      return Bytes.getInt(page, at);
    }
    return dev.polystack.plugin.api.RemoteMemory.super.readInt(address);
  }

  /** The cached, readable page holding {@code address}, or null (not read yet, or unreadable). */
  private byte[] cachedPage(long address) {
    long page = address & -PAGE;
    byte[] bytes = page == lastPage ? lastBytes : pages.get(page);
    if (bytes == null || bytes == UNREADABLE) {
      return null;
    }
    if (used != null && page != lastPage) {
      used.add(page);
    }
    lastPage = page;
    lastBytes = bytes;
    return bytes;
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length) throws MemoryReadException {
    return read(address, dst, offset, length, false);
  }

  private int readStable(long address, byte[] dst, int offset, int length)
      throws MemoryReadException {
    return read(address, dst, offset, length, true);
  }

  private int read(long address, byte[] dst, int offset, int length, boolean stable)
      throws MemoryReadException {
    if (length < 0 || length > MAX_READ) {
      throw new MemoryReadException(address, length, "length out of bounds");
    }
    int done = 0;
    while (done < length) {
      long at = address + done;
      int n = fromCopy(at, dst, offset + done, length - done);
      if (n == 0) {
        n = stable && !pages.containsKey(at & -PAGE)
            ? fromStable(at, dst, offset + done, length - done)
            : fromPage(at, dst, offset + done, length - done);
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

  /** One whole page, or UNREADABLE: pages are mapped whole, so a short read means it is not. */
  private static byte[] readPage(ProcessMemory source, long page) {
    byte[] bytes = new byte[PAGE];
    try {
      return source.read(page, bytes, 0, PAGE) == PAGE ? bytes : UNREADABLE;
    } catch (RemoteReadException e) {
      return UNREADABLE;
    }
  }

  /** A stable read of a page the snapshot lacks: from the live process, never a miss. */
  private int fromStable(long at, byte[] dst, int offset, int length) {
    long page = at & -PAGE;
    byte[] bytes = stablePages.get(page);
    if (bytes == null) {
      bytes = readInto(stablePages, stableSource, page);
      if (bytes == null) {
        return 0;
      }
      stableLiveReads++;
    }
    return bytes == UNREADABLE ? 0 : copyOut(bytes, page, at, dst, offset, length);
  }

  /**
   * Reads a page into {@code cache} and returns it (UNREADABLE included), or null when the cache
   * already holds as many pages as one sample may pull.
   */
  private static byte[] readInto(Map<Long, byte[]> cache, ProcessMemory source, long page) {
    if (cache.size() >= MAX_PAGES) {
      return null;
    }
    byte[] bytes = readPage(source, page);
    cache.put(page, bytes);
    return bytes;
  }

  private static int copyOut(byte[] bytes, long page, long at, byte[] dst, int offset,
      int length) {
    int index = (int) (at - page);
    int n = Math.min(length, PAGE - index);
    System.arraycopy(bytes, index, dst, offset, n);
    return n;
  }

  private int fromPage(long at, byte[] dst, int offset, int length) {
    long page = at & -PAGE;
    byte[] bytes = page == lastPage ? lastBytes : pages.get(page);
    if (bytes == null && live == null) {
      if (missed != null && missed.size() < MAX_PAGES) {
        missed.add(page);
      }
      return 0;
    }
    if (bytes == null) {
      bytes = readInto(pages, live, page);
      if (bytes == null) {
        return 0;
      }
      liveReads++;
      if (missed != null && missed.size() < MAX_PAGES) {
        missed.add(page); // prefetched mode: read live because the set lacked it
      }
    }
    if (bytes == UNREADABLE) {
      if (used != null) {
        used.add(page); // read, and found unmapped: the set keeps the answer
      }
      return 0;
    }
    if (used != null && page != lastPage) {
      used.add(page);
    }
    lastPage = page;
    lastBytes = bytes;
    return copyOut(bytes, page, at, dst, offset, length);
  }
}
