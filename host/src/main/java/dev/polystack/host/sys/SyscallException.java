package dev.polystack.host.sys;

import java.util.Objects;

/**
 * A failed system call, with the errno captured right after the call. The message states what
 * failed, why (errno name and meaning) and, for the common cases, what to do about it.
 */
public class SyscallException extends Exception {
  private static final long serialVersionUID = 1L;

  /** Coarse classification so callers can react without switching on errno numbers. */
  public enum Kind {
    PERMISSION,
    NO_SUCH_PROCESS,
    NOT_SUPPORTED,
    BUSY,
    INVALID_ARGUMENT,
    NO_SPACE,
    BAD_ADDRESS,
    IO,
    INTERRUPTED,
    OTHER;

    static Kind of(int errno) {
      switch (errno) {
        case Errno.EPERM:
        case Errno.EACCES:
          return PERMISSION;
        case Errno.ESRCH:
        case Errno.ECHILD:
          return NO_SUCH_PROCESS;
        case Errno.ENOENT:
        case Errno.ENOSYS:
        case Errno.EOPNOTSUPP:
        case Errno.ENODEV:
          return NOT_SUPPORTED;
        case Errno.EBUSY:
        case Errno.EAGAIN:
          return BUSY;
        case Errno.EINVAL:
        case Errno.E2BIG:
          return INVALID_ARGUMENT;
        case Errno.ENOSPC:
        case Errno.ENOMEM:
        case Errno.EMFILE:
        case Errno.ENFILE:
          return NO_SPACE;
        case Errno.EFAULT:
          return BAD_ADDRESS;
        case Errno.EIO:
          return IO;
        case Errno.EINTR:
          return INTERRUPTED;
        default:
          return OTHER;
      }
    }
  }

  /** Which family of calls failed; selects the remedy text. */
  public enum Area {
    PTRACE,
    PERF,
    MEMORY,
    SPAWN,
    OTHER
  }

  private final String call;
  private final int errno;
  private final Area area;

  public SyscallException(String call, int errno, Area area) {
    super(format(call, errno, area));
    this.call = Objects.requireNonNull(call, "call");
    this.errno = errno;
    this.area = Objects.requireNonNull(area, "area");
  }

  /** The call with its key arguments, e.g. {@code "ptrace(SEIZE, 1234)"}. */
  public String call() {
    return call;
  }

  public int errno() {
    return errno;
  }

  public String errnoName() {
    return Errno.name(errno);
  }

  public Kind kind() {
    return Kind.of(errno);
  }

  public Area area() {
    return area;
  }

  private static String format(String call, int errno, Area area) {
    StringBuilder sb = new StringBuilder();
    sb.append(call).append(" failed: ").append(Errno.name(errno));
    sb.append(" (").append(Errno.text(errno)).append(')');
    String advice = advice(errno, area);
    if (!advice.isEmpty()) {
      sb.append(": ").append(advice);
    }
    return sb.toString();
  }

  // Remedies differ per area: EPERM from ptrace and from perf_event_open have different fixes.
  static String advice(int errno, Area area) {
    switch (errno) {
      case Errno.EPERM:
      case Errno.EACCES:
        switch (area) {
          case PTRACE:
            return "run as root or grant CAP_SYS_PTRACE (and check /proc/sys/kernel/yama/ptrace_scope)";
          case PERF:
            return "run as root or grant CAP_PERFMON (or CAP_SYS_ADMIN), or lower"
                + " /proc/sys/kernel/perf_event_paranoid";
          case MEMORY:
            return "reading another process' memory needs ptrace access: run as root or grant"
                + " CAP_SYS_PTRACE (and check /proc/sys/kernel/yama/ptrace_scope)";
          default:
            return "check permissions and capabilities";
        }
      case Errno.ESRCH:
        return area == Area.PTRACE
            ? "the process may have exited, or the thread is not traced by us or not stopped"
            : "the process may have exited";
      case Errno.ECHILD:
        return "not a child of this process, or already reaped";
      case Errno.ENOENT:
        return area == Area.PERF
            ? "event type not supported on this machine (no hardware PMU?)"
            : area == Area.SPAWN ? "executable not found on PATH" : "";
      case Errno.EOPNOTSUPP:
        return area == Area.PERF
            ? "the event does not support this mode (e.g. sampling or the requested flags)"
            : "";
      case Errno.ENOSYS:
        return "the kernel does not provide this call";
      case Errno.EBUSY:
        return area == Area.PERF
            ? "the PMU or debug registers are in use by another user (another profiler or"
                + " debugger?)"
            : "resource in use, retry later";
      case Errno.EINVAL:
        return area == Area.PERF
            ? "the kernel rejected perf_event_attr (unsupported flag, sample_type, period or"
                + " breakpoint alignment/length)"
            : area == Area.PTRACE ? "invalid request, option or register offset" : "";
      case Errno.E2BIG:
        return area == Area.PERF ? "perf_event_attr.size is larger than this kernel supports" : "";
      case Errno.ENOSPC:
        return area == Area.PERF
            ? "no free hardware debug register (x86 has 4; others may be in use)"
            : "";
      case Errno.EFAULT:
        return "the address is not mapped in the target";
      case Errno.EIO:
        return area == Area.PTRACE ? "the address or register offset is invalid for the tracee" : "";
      case Errno.EMFILE:
        return "too many open files: raise the file descriptor limit (ulimit -n)";
      case Errno.EINTR:
        return "the waiting thread was interrupted";
      default:
        return "";
    }
  }
}
