package dev.polystack.host.memory;

import dev.polystack.host.ptrace.Ptrace;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.SyscallException.Area;
import dev.polystack.host.sys.Syscalls;
import java.lang.ref.Reference;
import java.util.Objects;
import jnr.ffi.Pointer;

/** process_vm_readv reader with an optional PTRACE_PEEKDATA fallback. */
final class ProcessVmMemory implements ProcessMemory {
  // Native staging buffer per call is bounded by this, whatever the request size.
  private static final int CHUNK = 256 << 10;

  /**
   * Per-thread native staging: zeroed jnr allocations cost more than the system call for the
   * page-sized reads a stack walk makes, and a sampled target waits for every one of them.
   */
  private static final ThreadLocal<Pointer[]> STAGING =
      ThreadLocal.withInitial(() -> new Pointer[] {Native.allocate(CHUNK), Native.allocate(32)});

  private final int pid;
  private final int maxReadBytes;
  private final Tracer tracer;
  private final int peekTid;

  ProcessVmMemory(int pid, int maxReadBytes, Tracer tracer, int peekTid) {
    this.pid = pid;
    this.maxReadBytes = maxReadBytes;
    this.tracer = tracer;
    this.peekTid = peekTid;
  }

  @Override
  public int maxReadBytes() {
    return maxReadBytes;
  }

  @Override
  public int read(long address, byte[] dst, int off, int len) throws RemoteReadException {
    Objects.checkFromIndexSize(off, len, dst.length);
    checkLength(address, len);
    if (len == 0) {
      return 0;
    }
    Pointer[] staging = STAGING.get();
    Pointer buf = staging[0];
    Pointer iov = staging[1];
    int total = 0;
    while (total < len) {
      int want = Math.min(len - total, CHUNK);
      long at = address + total;
      iov.putLong(0, buf.address());
      iov.putLong(8, want);
      iov.putLong(16, at);
      iov.putLong(24, want);
      long n =
          Native.libc()
              .syscall(Syscalls.SYS_PROCESS_VM_READV, pid, iov.address(), 1, iov.address() + 16, 1, 0);
      // jnr frees native memory once its Pointer is unreachable; keep iov alive past the call.
      Reference.reachabilityFence(iov);
      if (n > 0) {
        buf.get(0, dst, off + total, (int) n);
        total += (int) n;
        if (n == want) {
          continue;
        }
        // Short: the kernel stops at the first unreadable page of the range.
        return total + peekRemainder(address + total, dst, off + total, len - total);
      }
      int errno = n == 0 ? Errno.EFAULT : Native.errno();
      if (errno == Errno.EFAULT || errno == Errno.EPERM || errno == Errno.ENOSYS) {
        int peeked = peekRemainder(at, dst, off + total, len - total);
        if (peeked > 0 || errno == Errno.EFAULT) {
          return total + peeked;
        }
      }
      if (total > 0) {
        return total;
      }
      SyscallException cause =
          new SyscallException("process_vm_readv(" + pid + ", 0x" + Long.toHexString(at) + ", " + want + ")", errno, Area.MEMORY);
      throw new RemoteReadException(
          cause.getMessage(), address, len, total, RemoteReadException.Reason.SYSCALL, cause);
    }
    return total;
  }

  /** Ranges per scattered call: far below IOV_MAX (1024), and what a sample needs. */
  static final int MAX_SCATTER = 128;

  private static final ThreadLocal<Pointer> SCATTER_IOV =
      ThreadLocal.withInitial(() -> Native.allocate(2 * 16 * MAX_SCATTER));

  /**
   * One process_vm_readv for all ranges (staged through one native buffer). The kernel stops at
   * the first range it cannot read in full; the ranges after it are read by another call that
   * starts past it, so each failing range costs one more call and the others are unaffected.
   */
  @Override
  public int[] readScattered(long[] addresses, byte[][] dst) throws RemoteReadException {
    int count = addresses.length;
    if (dst.length != count || count > MAX_SCATTER) {
      throw new IllegalArgumentException("1.." + MAX_SCATTER + " ranges with one buffer each");
    }
    long total = 0;
    for (byte[] d : dst) {
      total += checkLength(0, d.length);
    }
    if (total > CHUNK) {
      return ProcessMemory.super.readScattered(addresses, dst);
    }
    int[] got = new int[count];
    Pointer buf = STAGING.get()[0];
    Pointer iov = SCATTER_IOV.get();
    int first = 0;
    while (first < count) {
      long offset = 0;
      int n = count - first;
      for (int i = 0; i < n; i++) {
        int len = dst[first + i].length;
        iov.putLong(16L * i, buf.address() + offset);
        iov.putLong(16L * i + 8, len);
        iov.putLong(16L * (n + i), addresses[first + i]);
        iov.putLong(16L * (n + i) + 8, len);
        offset += len;
      }
      long r = Native.libc().syscall(Syscalls.SYS_PROCESS_VM_READV, pid, iov.address(), n,
          iov.address() + 16L * n, n, 0);
      Reference.reachabilityFence(iov);
      if (r < 0) {
        int errno = Native.errno();
        if (errno != Errno.EFAULT) {
          SyscallException cause = new SyscallException("process_vm_readv(" + pid + ", " + n
              + " ranges)", errno, Area.MEMORY);
          throw new RemoteReadException(cause.getMessage(), addresses[first], 0, 0,
              RemoteReadException.Reason.SYSCALL, cause);
        }
        r = 0; // the first range is unreadable
      }
      // Hand out what arrived, range by range; the range the kernel stopped in is partial (or
      // empty) and the next call starts after it.
      long left = r;
      long at = 0;
      int i = first;
      for (; i < count; i++) {
        int len = dst[i].length;
        int take = (int) Math.min(len, left);
        buf.get(at, dst[i], 0, take);
        got[i] = take;
        at += len;
        left -= take;
        if (take < len) {
          break;
        }
      }
      first = i + 1;
    }
    return got;
  }

  /** PEEKDATA fallback; returns bytes delivered (0 when not configured or not possible). */
  private int peekRemainder(long address, byte[] dst, int off, int len) {
    if (tracer == null) {
      return 0;
    }
    try {
      // One task for the whole range: a thread hop per word would dominate the cost.
      return tracer.call(p -> peekRange(p, address, dst, off, len));
    } catch (SyscallException | RuntimeException e) {
      return 0;
    }
  }

  private int peekRange(Ptrace p, long address, byte[] dst, int off, int len) {
    // Aligned words: an unaligned 8-byte peek near the end of a mapping could fault even though
    // the bytes we want are readable.
    int done = 0;
    long word = address & ~7L;
    while (done < len) {
      long value;
      try {
        value = p.peekData(peekTid, word);
      } catch (SyscallException e) {
        return done;
      }
      int skip = (int) (address + done - word);
      for (int i = skip; i < 8 && done < len; i++) {
        dst[off + done++] = (byte) (value >>> (8 * i));
      }
      word += 8;
    }
    return done;
  }
}
