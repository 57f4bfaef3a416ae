package dev.polystack.host.perf;

import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.SyscallException.Area;
import dev.polystack.host.sys.Syscalls;
import java.lang.ref.Reference;
import java.util.Objects;
import jnr.ffi.Pointer;

/** An open perf event file descriptor. Close releases the ring buffer (if mapped) and the fd. */
public final class PerfEvent implements AutoCloseable {
  private final int fd;
  private final PerfEventAttr attr;
  private PerfRingBuffer ring;
  private boolean closed;

  private PerfEvent(int fd, PerfEventAttr attr) {
    this.fd = fd;
    this.attr = attr;
  }

  /**
   * perf_event_open(attr, pid, cpu, groupFd, flags | FD_CLOEXEC). {@code pid} is a thread id for
   * per-thread events, {@code cpu} -1 for any CPU, {@code groupFd} -1 for no group.
   */
  public static PerfEvent open(PerfEventAttr attr, int pid, int cpu, int groupFd, long flags)
      throws SyscallException {
    Objects.requireNonNull(attr, "attr");
    byte[] bytes = attr.encode();
    Pointer p = Native.allocate(bytes.length);
    p.put(0, bytes, 0, bytes.length);
    long fd =
        Native.libc()
            .syscall(
                Syscalls.SYS_PERF_EVENT_OPEN,
                p.address(), pid, cpu, groupFd, flags | PerfConstants.FLAG_FD_CLOEXEC, 0);
    Reference.reachabilityFence(p);
    Syscalls.check(
        fd,
        "perf_event_open(type " + attr.type() + ", config " + attr.config() + ", pid " + pid
            + ", cpu " + cpu + ")",
        Area.PERF);
    return new PerfEvent((int) fd, attr);
  }

  /** Per-thread event on any CPU. */
  public static PerfEvent open(PerfEventAttr attr, int tid) throws SyscallException {
    return open(attr, tid, -1, -1, 0);
  }

  public int fd() {
    return fd;
  }

  public PerfEventAttr attr() {
    return attr;
  }

  public void enable() throws SyscallException {
    ioctl(PerfConstants.IOC_ENABLE, 0, "ENABLE");
  }

  public void disable() throws SyscallException {
    ioctl(PerfConstants.IOC_DISABLE, 0, "DISABLE");
  }

  public void reset() throws SyscallException {
    ioctl(PerfConstants.IOC_RESET, 0, "RESET");
  }

  /** Enables for {@code count} more overflows, then disables again. */
  public void refresh(int count) throws SyscallException {
    ioctl(PerfConstants.IOC_REFRESH, count, "REFRESH");
  }

  /** Changes attributes in place; the kernel only supports this for breakpoints. */
  public void modifyAttributes(PerfEventAttr updated) throws SyscallException {
    byte[] bytes = updated.encode();
    Pointer p = Native.allocate(bytes.length);
    p.put(0, bytes, 0, bytes.length);
    ioctl(PerfConstants.IOC_MODIFY_ATTRIBUTES, p.address(), "MODIFY_ATTRIBUTES");
    Reference.reachabilityFence(p);
  }

  /**
   * Sends this event's records to {@code target}'s ring (PERF_EVENT_IOC_SET_OUTPUT), so several
   * events of one thread share a ring and their records stay in order. Both must be per-task
   * events of the same task (or of the same CPU).
   */
  public void setOutput(PerfEvent target) throws SyscallException {
    ioctl(PerfConstants.IOC_SET_OUTPUT, target.fd, "SET_OUTPUT");
  }

  /** Kernel event id, as found in SAMPLE_ID/IDENTIFIER and in LOST records. */
  public long id() throws SyscallException {
    Pointer p = Native.allocate(8);
    ioctl(PerfConstants.IOC_ID, p.address(), "ID");
    return p.getLong(0);
  }

  /** Current counter value (read_format 0). */
  public long readCount() throws SyscallException {
    Pointer p = Native.allocate(8);
    long n = Native.libc().read(fd, p, 8);
    Syscalls.check(n, "read(perf fd " + fd + ")", Area.PERF);
    if (n != 8) {
      throw new SyscallException("read(perf fd " + fd + ") returned " + n + " bytes", Errno.EIO, Area.PERF);
    }
    return p.getLong(0);
  }

  /** Maps a ring of 2^{@code dataPagesLog2} data pages (plus the control page). Once only. */
  public synchronized PerfRingBuffer mapRing(int dataPagesLog2) throws SyscallException {
    if (ring != null) {
      throw new IllegalStateException("ring already mapped");
    }
    ring = PerfRingBuffer.map(this, dataPagesLog2);
    return ring;
  }

  private void ioctl(long request, long arg, String name) throws SyscallException {
    Syscalls.check(Native.libc().ioctl(fd, request, arg), "ioctl(perf fd " + fd + ", " + name + ")", Area.PERF);
  }

  @Override
  public synchronized void close() throws SyscallException {
    if (closed) {
      return;
    }
    closed = true;
    if (ring != null) {
      ring.unmap();
    }
    Syscalls.close(fd);
  }
}
