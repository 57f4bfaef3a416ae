package dev.polystack.vdso;

/**
 * Names of the errno values a vDSO function can return (as a negative rax when it falls back to
 * the system call convention) or a libc wrapper can set.
 */
final class Errno {
  private static final String[] NAMES = new String[135];

  static {
    String[][] table = {
      {"1", "EPERM"}, {"2", "ENOENT"}, {"3", "ESRCH"}, {"4", "EINTR"}, {"5", "EIO"},
      {"9", "EBADF"}, {"11", "EAGAIN"}, {"12", "ENOMEM"}, {"13", "EACCES"}, {"14", "EFAULT"},
      {"16", "EBUSY"}, {"22", "EINVAL"}, {"38", "ENOSYS"}, {"75", "EOVERFLOW"},
      {"95", "EOPNOTSUPP"}
    };
    for (String[] row : table) {
      NAMES[Integer.parseInt(row[0])] = row[1];
    }
  }

  private Errno() {}

  /**
   * The errno name for a raw result in the kernel's error range (-4095..-1), or null for a
   * success; an error number without a name is written {@code E<number>}.
   */
  static String nameOfResult(long rax) {
    if (rax >= 0 || rax < -4095) {
      return null;
    }
    int errno = (int) -rax;
    String name = errno < NAMES.length ? NAMES[errno] : null;
    return name != null ? name : "E" + errno;
  }
}
