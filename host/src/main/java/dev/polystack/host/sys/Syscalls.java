package dev.polystack.host.sys;

/** Small helpers that turn libc's {@code -1 + errno} convention into {@link SyscallException}. */
public final class Syscalls {
  private Syscalls() {}

  public static final long SYS_PERF_EVENT_OPEN = 298;
  public static final long SYS_TGKILL = 234;
  public static final long SYS_MMAP = 9;
  public static final long SYS_PROCESS_VM_READV = 310;

  public static final int SIGHUP = 1;
  public static final int SIGINT = 2;
  public static final int SIGQUIT = 3;
  public static final int SIGTRAP = 5;
  public static final int SIGKILL = 9;
  public static final int SIGUSR1 = 10;
  public static final int SIGSEGV = 11;
  public static final int SIGPIPE = 13;
  public static final int SIGTERM = 15;
  public static final int SIGCHLD = 17;
  public static final int SIGCONT = 18;
  public static final int SIGSTOP = 19;
  public static final int SIGTSTP = 20;
  public static final int SIGTTIN = 21;
  public static final int SIGTTOU = 22;

  /** Throws when {@code result == -1}, reading errno immediately. */
  public static long check(long result, String call, SyscallException.Area area)
      throws SyscallException {
    if (result == -1) {
      throw new SyscallException(call, Native.errno(), area);
    }
    return result;
  }

  /** For posix_spawn*-style calls that return the error number instead of setting errno. */
  public static void checkReturned(int rc, String call, SyscallException.Area area)
      throws SyscallException {
    if (rc != 0) {
      throw new SyscallException(call, rc, area);
    }
  }

  public static void kill(int pid, int signal) throws SyscallException {
    check(Native.libc().kill(pid, signal), "kill(" + pid + ", " + signal + ")", SyscallException.Area.OTHER);
  }

  public static void tgkill(int tgid, int tid, int signal) throws SyscallException {
    check(
        Native.libc().syscall(SYS_TGKILL, tgid, tid, signal, 0, 0, 0),
        "tgkill(" + tgid + ", " + tid + ", " + signal + ")",
        SyscallException.Area.OTHER);
  }

  /**
   * Sets {@code signal}'s disposition to the default (SIG_DFL), so that the JVM will install a
   * handler for it: it refuses to for a signal the process inherited as ignored.
   */
  public static void defaultDisposition(int signal) throws SyscallException {
    check(Native.libc().signal(signal, 0), "signal(" + signal + ", SIG_DFL)",
        SyscallException.Area.OTHER);
  }

  public static void close(int fd) throws SyscallException {
    check(Native.libc().close(fd), "close(" + fd + ")", SyscallException.Area.OTHER);
  }
}
