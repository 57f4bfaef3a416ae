package dev.polystack.host.perf;

import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.SyscallException.Area;
import dev.polystack.host.sys.Syscalls;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.function.Consumer;
import jnr.ffi.Pointer;

/**
 * Reader of a perf mmap ring: one control page followed by 2^n data pages. Single consumer; not
 * thread-safe. Mapped writable so the kernel honours data_tail and reports overflow as
 * PERF_RECORD_LOST instead of overwriting unread data.
 *
 * <p>Memory ordering follows the protocol in perf_event.h: load data_head, then an acquire fence
 * before reading record bytes; a release fence after the last read, then store data_tail.
 */
public final class PerfRingBuffer {
  private static final int PAGE = 4096;
  private static final int OFF_DATA_HEAD = 1024;
  private static final int OFF_DATA_TAIL = 1032;
  private static final int OFF_DATA_OFFSET = 1040;
  private static final int OFF_DATA_SIZE = 1048;
  private static final int PROT_READ_WRITE = 0x3;
  private static final int MAP_SHARED = 0x1;
  private static final int POLLIN = 0x1;

  private final int fd;
  private final long base;
  private final long mapLength;
  private final Pointer control;
  private final Pointer data;
  private final long dataSize;
  private final long mask;
  private final Pointer pollFd = Native.allocate(8);
  private long tail;
  private boolean unmapped;

  private long samples;
  private long lostRecords;
  private long lostEvents;
  private long throttles;
  private long unthrottles;
  private long wrapped;
  private long malformed;

  private PerfRingBuffer(int fd, long base, long mapLength) {
    this.fd = fd;
    this.base = base;
    this.mapLength = mapLength;
    this.control = Native.wrap(base, PAGE);
    long off = control.getLong(OFF_DATA_OFFSET);
    long size = control.getLong(OFF_DATA_SIZE);
    if (off == 0 || size == 0) {
      // Pre-4.1 kernels leave these zero; the layout is then fixed.
      off = PAGE;
      size = mapLength - PAGE;
    }
    this.dataSize = size;
    this.mask = size - 1;
    this.data = Native.wrap(base + off, size);
    this.tail = control.getLong(OFF_DATA_TAIL);
  }

  static PerfRingBuffer map(PerfEvent event, int dataPagesLog2) throws SyscallException {
    if (dataPagesLog2 < 0 || dataPagesLog2 > 16) {
      throw new IllegalArgumentException("dataPagesLog2 must be 0..16: " + dataPagesLog2);
    }
    long length = (long) PAGE * (1 + (1L << dataPagesLog2));
    long addr =
        Native.libc()
            .syscall(Syscalls.SYS_MMAP, 0, length, PROT_READ_WRITE, MAP_SHARED, event.fd(), 0);
    Syscalls.check(addr, "mmap(perf fd " + event.fd() + ", " + length + " bytes)", Area.OTHER);
    return new PerfRingBuffer(event.fd(), addr, length);
  }

  /** Bytes of the data area. */
  public long dataSize() {
    return dataSize;
  }

  /** True if the kernel has published records not yet consumed. */
  public boolean hasData() {
    checkMapped();
    long head = control.getLong(OFF_DATA_HEAD);
    VarHandle.acquireFence();
    return head != tail;
  }

  /**
   * Blocks in poll() until the kernel signals data (per wakeup_events / watermark), the event
   * hangs up, or the timeout passes. Returns true if data is available.
   */
  public boolean awaitData(Duration timeout) throws SyscallException {
    if (hasData()) {
      return true;
    }
    pollFd.putInt(0, fd);
    pollFd.putShort(4, (short) POLLIN);
    pollFd.putShort(6, (short) 0);
    long ms = Math.min(Integer.MAX_VALUE, Math.max(0, timeout.toMillis()));
    int r = Native.libc().poll(pollFd, 1, (int) ms);
    Syscalls.check(r, "poll(perf fd " + fd + ")", Area.PERF);
    return hasData();
  }

  /**
   * Consumes every published record. LOST/THROTTLE/UNTHROTTLE are counted here and also passed
   * on; everything else goes to {@code handler}. Returns the number of records consumed.
   *
   * <p>A header with size &lt; 8, larger than the published bytes or larger than the ring means
   * the stream cannot be trusted: the reader counts it, skips to data_head and stops.
   */
  public int drain(Consumer<PerfRecord> handler) {
    checkMapped();
    long head = control.getLong(OFF_DATA_HEAD);
    VarHandle.acquireFence();
    int count = 0;
    byte[] header = new byte[8];
    while (tail != head) {
      long avail = head - tail;
      if (avail < 8 || avail > dataSize) {
        malformed++;
        tail = head;
        break;
      }
      copyOut(tail, header, 0, 8);
      int type = le32(header, 0);
      int misc = le16(header, 4);
      int size = le16(header, 6);
      if (size < 8 || size > avail || size > dataSize) {
        malformed++;
        tail = head;
        break;
      }
      boolean wraps = (tail & mask) + size > dataSize;
      byte[] body = new byte[size - 8];
      copyOut(tail + 8, body, 0, body.length);
      tail += size;
      count++;
      if (wraps) {
        wrapped++;
      }
      PerfRecord rec = new PerfRecord(type, misc, body, wraps);
      switch (type) {
        case PerfConstants.RECORD_SAMPLE:
          samples++;
          break;
        case PerfConstants.RECORD_LOST:
          lostRecords++;
          if (body.length >= 16) {
            lostEvents += le64(body, 8);
          }
          break;
        case PerfConstants.RECORD_THROTTLE:
          throttles++;
          break;
        case PerfConstants.RECORD_UNTHROTTLE:
          unthrottles++;
          break;
        default:
          break;
      }
      handler.accept(rec);
    }
    VarHandle.releaseFence();
    control.putLong(OFF_DATA_TAIL, tail);
    return count;
  }

  public Stats stats() {
    return new Stats(samples, lostRecords, lostEvents, throttles, unthrottles, wrapped, malformed);
  }

  /**
   * Running counters. {@code lostEvents} sums the "lost" fields of PERF_RECORD_LOST, i.e. samples
   * the kernel dropped; {@code wrapped} counts records reassembled across the end of the ring.
   */
  public record Stats(
      long samples,
      long lostRecords,
      long lostEvents,
      long throttles,
      long unthrottles,
      long wrapped,
      long malformed) {}

  // Copies ring bytes starting at absolute position pos, splitting at the end of the ring.
  private void copyOut(long pos, byte[] dst, int off, int len) {
    long start = pos & mask;
    int first = (int) Math.min(len, dataSize - start);
    data.get(start, dst, off, first);
    if (first < len) {
      data.get(0, dst, off + first, len - first);
    }
  }

  void unmap() throws SyscallException {
    if (unmapped) {
      return;
    }
    unmapped = true;
    Syscalls.check(Native.libc().munmap(base, mapLength), "munmap(perf ring)", Area.PERF);
  }

  private void checkMapped() {
    if (unmapped) {
      throw new IllegalStateException("ring buffer is unmapped");
    }
  }

  private static int le16(byte[] b, int i) {
    return (b[i] & 0xff) | (b[i + 1] & 0xff) << 8;
  }

  private static int le32(byte[] b, int i) {
    return le16(b, i) | le16(b, i + 2) << 16;
  }

  private static long le64(byte[] b, int i) {
    return (le32(b, i) & 0xffffffffL) | ((long) le32(b, i + 4)) << 32;
  }
}
