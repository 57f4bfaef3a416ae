package dev.polystack.host.sys;

import java.util.Map;

/** The errno values polystack reports by name; numbers are the Linux x86-64 ABI ones. */
public final class Errno {
  private Errno() {}

  public static final int EPERM = 1;
  public static final int ENOENT = 2;
  public static final int ESRCH = 3;
  public static final int EINTR = 4;
  public static final int EIO = 5;
  public static final int E2BIG = 7;
  public static final int ENOEXEC = 8;
  public static final int EBADF = 9;
  public static final int ECHILD = 10;
  public static final int EAGAIN = 11;
  public static final int ENOMEM = 12;
  public static final int EACCES = 13;
  public static final int EFAULT = 14;
  public static final int EBUSY = 16;
  public static final int EEXIST = 17;
  public static final int ENODEV = 19;
  public static final int ENOTDIR = 20;
  public static final int EINVAL = 22;
  public static final int ENFILE = 23;
  public static final int EMFILE = 24;
  public static final int ENOTTY = 25;
  public static final int ENOSPC = 28;
  public static final int ERANGE = 34;
  public static final int ENOSYS = 38;
  public static final int ELOOP = 40;
  public static final int EOPNOTSUPP = 95;

  private record Entry(String name, String text) {}

  private static final Map<Integer, Entry> TABLE =
      Map.ofEntries(
          Map.entry(EPERM, new Entry("EPERM", "operation not permitted")),
          Map.entry(ENOENT, new Entry("ENOENT", "no such file, directory or event type")),
          Map.entry(ESRCH, new Entry("ESRCH", "no such process")),
          Map.entry(EINTR, new Entry("EINTR", "interrupted")),
          Map.entry(EIO, new Entry("EIO", "input/output error")),
          Map.entry(E2BIG, new Entry("E2BIG", "argument list or structure too big")),
          Map.entry(ENOEXEC, new Entry("ENOEXEC", "exec format error")),
          Map.entry(EBADF, new Entry("EBADF", "bad file descriptor")),
          Map.entry(ECHILD, new Entry("ECHILD", "no child processes")),
          Map.entry(EAGAIN, new Entry("EAGAIN", "resource temporarily unavailable")),
          Map.entry(ENOMEM, new Entry("ENOMEM", "out of memory")),
          Map.entry(EACCES, new Entry("EACCES", "permission denied")),
          Map.entry(EFAULT, new Entry("EFAULT", "bad address")),
          Map.entry(EBUSY, new Entry("EBUSY", "device or resource busy")),
          Map.entry(EEXIST, new Entry("EEXIST", "already exists")),
          Map.entry(ENODEV, new Entry("ENODEV", "no such device")),
          Map.entry(ENOTDIR, new Entry("ENOTDIR", "not a directory")),
          Map.entry(EINVAL, new Entry("EINVAL", "invalid argument")),
          Map.entry(ENFILE, new Entry("ENFILE", "too many open files in the system")),
          Map.entry(EMFILE, new Entry("EMFILE", "too many open files")),
          Map.entry(ENOTTY, new Entry("ENOTTY", "inappropriate ioctl for device")),
          Map.entry(ENOSPC, new Entry("ENOSPC", "no space left")),
          Map.entry(ERANGE, new Entry("ERANGE", "result out of range")),
          Map.entry(ENOSYS, new Entry("ENOSYS", "function not implemented")),
          Map.entry(ELOOP, new Entry("ELOOP", "too many symbolic links, or one where none may be followed")),
          Map.entry(EOPNOTSUPP, new Entry("EOPNOTSUPP", "operation not supported")));

  /** Symbolic name such as {@code "EPERM"}, or {@code "errno 123"} for values not in the table. */
  public static String name(int errno) {
    Entry e = TABLE.get(errno);
    return e != null ? e.name() : "errno " + errno;
  }

  /** Short lower-case description such as {@code "operation not permitted"}. */
  public static String text(int errno) {
    Entry e = TABLE.get(errno);
    return e != null ? e.text() : "unknown error";
  }
}
