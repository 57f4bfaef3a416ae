package dev.polystack.host.perf;

import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.SyscallException.Area;
import jnr.ffi.Pointer;

/**
 * One poll() over many perf file descriptors, so a single reader thread can serve the rings of
 * every thread of a target instead of waiting on each in turn. Not thread-safe.
 */
public final class PerfPoll {
  public static final short POLLIN = 0x1;
  public static final short POLLERR = 0x8;
  public static final short POLLHUP = 0x10;

  private Pointer fds = Native.allocate(8);
  private int capacity = 1;

  /**
   * Waits until one of {@code fds} is readable or hung up (a per-thread event hangs up when its
   * thread exits), or {@code timeoutMillis} passes. Returns the revents of each fd, in order; an
   * interrupted wait returns all zeros.
   */
  public short[] await(int[] fdList, int timeoutMillis) throws SyscallException {
    short[] revents = new short[fdList.length];
    if (fdList.length > capacity) {
      capacity = Integer.highestOneBit(fdList.length) << 1;
      fds = Native.allocate(8 * capacity);
    }
    for (int i = 0; i < fdList.length; i++) {
      fds.putInt(8L * i, fdList[i]);
      fds.putShort(8L * i + 4, POLLIN);
      fds.putShort(8L * i + 6, (short) 0);
    }
    int r = Native.libc().poll(fds, fdList.length, timeoutMillis);
    if (r < 0) {
      int errno = Native.errno();
      if (errno == Errno.EINTR) {
        return revents;
      }
      throw new SyscallException("poll(" + fdList.length + " perf fds)", errno, Area.PERF);
    }
    for (int i = 0; r > 0 && i < fdList.length; i++) {
      revents[i] = fds.getShort(8L * i + 6);
    }
    return revents;
  }
}
