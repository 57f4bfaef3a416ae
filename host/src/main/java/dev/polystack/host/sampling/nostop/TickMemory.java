package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.sampling.SampleMemory;
import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;
import java.util.List;

/**
 * Target memory as a tick-time capture saw it: the stack copy and the regions the runtimes'
 * plans copied in the kernel at the tick are served first, so a walk sees them at one instant
 * with the registers. Anything else is read from the live process after the tick (through a
 * per-sample page cache; stable reads through one the caller may share over a batch); such
 * reads of memory that may have changed since (not {@link #stable()}) are counted, since a plan
 * that covers its runtime makes none. Stable reads go through the process's {@link
 * LastLivePages}, so a record walked after the process exited still finds its runtime's code
 * objects.
 */
final class TickMemory implements RemoteMemory {
  private final long[] starts;
  private final byte[][] contents;
  private final SampleMemory live;
  /** The live pages of stable reads, apart from {@link #live}: only they may be kept pages. */
  private final SampleMemory stableLive;
  private final RemoteMemory stableView = new StableView();
  private int uncapturedReads;
  /** Pages of those reads, for {@link LearnedPages}; bounded. */
  private final java.util.Set<Long> uncapturedPages = new java.util.LinkedHashSet<>();

  /**
   * @param live the process's memory, read after the tick for anything not captured
   * @param stablePages where stable reads go: see {@link #stablePages}
   */
  TickMemory(CaptureRecord record, dev.polystack.host.memory.ProcessMemory live,
      SampleMemory stablePages) {
    List<CaptureRecord.Region> regions = record.regions();
    starts = new long[regions.size() + 1];
    contents = new byte[regions.size() + 1][];
    starts[0] = record.stackStart();
    contents[0] = record.stack();
    for (int i = 0; i < regions.size(); i++) {
      starts[i + 1] = regions.get(i).address();
      contents[i + 1] = regions.get(i).bytes();
    }
    this.live = new SampleMemory(live, 0, new byte[0], 0);
    this.stableLive = stablePages;
  }

  /**
   * A page cache for stable reads of {@code live}, through the pages the process's stable reads
   * last found ({@code kept}). It may serve every record of one batch: a stable object does not
   * change while reachable, and all of a batch's ticks came before its first read.
   */
  static SampleMemory stablePages(dev.polystack.host.memory.ProcessMemory live,
      LastLivePages kept) {
    return new SampleMemory(kept.over(live), 0, new byte[0], 0);
  }

  /** Reads that needed memory captured at the tick but went to the live process. */
  int uncapturedReads() {
    return uncapturedReads;
  }

  /** Pages that reads which should have come from the tick went to the live process for. */
  java.util.Set<Long> uncapturedPages() {
    return uncapturedPages;
  }

  @Override
  public RemoteMemory stable() {
    return stableView;
  }

  @Override
  public long readLong(long address) throws MemoryReadException {
    int i = capturedIndex(address, 8);
    return i >= 0 ? Bytes.getLong(contents[i], (int) (address - starts[i]))
        : RemoteMemory.super.readLong(address);
  }

  @Override
  public int readInt(long address) throws MemoryReadException {
    int i = capturedIndex(address, 4);
    return i >= 0 ? Bytes.getInt(contents[i], (int) (address - starts[i]))
        : RemoteMemory.super.readInt(address);
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length) throws MemoryReadException {
    return read(address, dst, offset, length, false);
  }

  /**
   * Reads of stable objects: words without the array the default methods allocate, since a
   * runtime's walk reads its prototypes' headers on every sample and they are rarely captured.
   */
  private final class StableView implements RemoteMemory {
    @Override
    public int read(long address, byte[] dst, int offset, int length)
        throws MemoryReadException {
      return TickMemory.this.read(address, dst, offset, length, true);
    }

    @Override
    public long readLong(long address) throws MemoryReadException {
      int i = capturedIndex(address, 8);
      if (i >= 0) {
        return Bytes.getLong(contents[i], (int) (address - starts[i]));
      }
      return overlapsCapture(address, 8) ? RemoteMemory.super.readLong(address)
          : stableLive.readLong(address);
    }

    @Override
    public int readInt(long address) throws MemoryReadException {
      int i = capturedIndex(address, 4);
      if (i >= 0) {
        return Bytes.getInt(contents[i], (int) (address - starts[i]));
      }
      return overlapsCapture(address, 4) ? RemoteMemory.super.readInt(address)
          : stableLive.readInt(address);
    }
  }

  /** The captured range holding all of [address, address + length), or -1. */
  private int capturedIndex(long address, int length) {
    for (int i = 0; i < starts.length; i++) {
      long index = address - starts[i];
      if (index >= 0 && index <= contents[i].length - (long) length) {
        return i;
      }
    }
    return -1;
  }

  /** Whether any captured range holds part of [address, address + length). */
  private boolean overlapsCapture(long address, int length) {
    for (int i = 0; i < starts.length; i++) {
      if (contents[i].length > 0 && starts[i] < address + length
          && address < starts[i] + contents[i].length) {
        return true;
      }
    }
    return false;
  }

  private int read(long address, byte[] dst, int offset, int length, boolean stable)
      throws MemoryReadException {
    if (length < 0 || length > MAX_READ) {
      throw new MemoryReadException(address, length, "length out of bounds");
    }
    int done = 0;
    boolean counted = false;
    while (done < length) {
      long at = address + done;
      int n = fromCapture(at, dst, offset + done, length - done);
      if (n == 0) {
        if (!stable && !counted) {
          uncapturedReads++;
          counted = true;
        }
        int chunk = (int) Math.min(length - done, nextCaptureStart(at) - at);
        try {
          n = (stable ? stableLive : live).read(at, dst, offset + done, chunk);
        } catch (MemoryReadException e) {
          n = 0;
        }
        if (!stable && n > 0 && uncapturedPages.size() < SampleMemory.MAX_PAGES) {
          uncapturedPages.add(at & -SampleMemory.PAGE); // readable: worth copying at the tick
        }
      }
      if (n <= 0) {
        break;
      }
      done += n;
    }
    if (done == 0 && length > 0) {
      throw new MemoryReadException(address, length, "unreadable");
    }
    return done;
  }

  private int fromCapture(long at, byte[] dst, int offset, int length) {
    for (int i = 0; i < starts.length; i++) {
      long index = at - starts[i];
      if (index >= 0 && index < contents[i].length) {
        int n = (int) Math.min(length, contents[i].length - index);
        System.arraycopy(contents[i], (int) index, dst, offset, n);
        return n;
      }
    }
    return 0;
  }

  /** Where the next captured range after {@code at} begins (so a live read stops short of it). */
  private long nextCaptureStart(long at) {
    long next = Long.MAX_VALUE;
    for (int i = 0; i < starts.length; i++) {
      if (starts[i] > at && contents[i].length > 0 && starts[i] < next) {
        next = starts[i];
      }
    }
    return next;
  }
}
