package dev.polystack.host.sampling;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import jnr.ffi.Pointer;

/**
 * A process's exit as the kernel reports it on a pidfd: readable once the whole thread group has
 * exited, whoever gets the pid afterwards. Where the kernel has no pidfd_open (before 5.3) the
 * process's identity is compared with /proc instead ({@link TargetExit#ofProc}).
 */
final class PidfdExit implements TargetExit {
  private static final long SYS_PIDFD_OPEN = 434;
  private static final short POLLIN = 0x1;
  private static final short POLLHUP = 0x10;

  private final int fd;
  private final Pointer pollFd = Native.allocate(8);
  private boolean gone;
  private boolean closed;

  private PidfdExit(int fd) {
    this.fd = fd;
  }

  static TargetExit open(ProcFs proc, int pid, ProcessIdentity expected)
      throws SamplingException {
    ProcessIdentity meant = expected != null ? expected
        : ProcessIdentity.read(proc, pid).orElseThrow(() -> new SamplingException("process "
            + pid + " does not exist (it may have exited)"));
    if (meant.pid() != pid) {
      throw new IllegalArgumentException("identity of " + meant.pid() + " for pid " + pid);
    }
    int fd = (int) Native.libc().syscall(SYS_PIDFD_OPEN, pid, 0, 0, 0, 0, 0);
    int errno = fd < 0 ? Native.errno() : 0;
    // The pidfd names whichever process had the pid when it was opened; that is the process
    // meant if the pid still shows it now, since the process meant started before the open.
    if (!meant.isCurrent(proc)) {
      if (fd >= 0) {
        Native.libc().close(fd);
      }
      throw new SamplingException("process " + pid + " exited before it was attached (its pid"
          + " now names another process, or none)");
    }
    if (fd < 0) {
      if (errno == Errno.ESRCH) {
        throw new SamplingException("process " + pid + " does not exist (it may have exited)");
      }
      return TargetExit.ofProc(proc, pid); // ENOSYS (before Linux 5.3), or refused
    }
    return new PidfdExit(fd);
  }

  @Override
  public synchronized boolean gone() {
    if (!gone && !closed) {
      pollFd.putInt(0, fd);
      pollFd.putShort(4, POLLIN);
      pollFd.putShort(6, (short) 0);
      int r = Native.libc().poll(pollFd, 1, 0); // EINTR: asked again at the next check
      gone = r > 0 && (pollFd.getShort(6) & (POLLIN | POLLHUP)) != 0;
    }
    return gone;
  }

  @Override
  public WaitStatus status() {
    return null;
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      Native.libc().close(fd);
    }
  }
}
