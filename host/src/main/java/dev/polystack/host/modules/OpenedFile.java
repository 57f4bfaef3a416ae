package dev.polystack.host.modules;

import dev.polystack.host.sys.DescriptorLimit;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.Syscalls;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import jnr.ffi.Pointer;

/**
 * A file of a target opened exactly once, with O_PATH: that open has no side effect on a FIFO
 * (no writer wakes up) or a device node (no driver open runs) planted in a file's place. The
 * descriptor is what gets checked (device, inode, type); only a regular file is then reopened
 * for reading, through /proc/self/fd/N, a link to this open file itself rather than a path that
 * is looked up again, so nothing can be swapped in between the check and the read. Paths inside
 * the target's root are resolved by the kernel with openat2 RESOLVE_IN_ROOT (absolute symlinks
 * and ".." stay inside that root) and RESOLVE_NO_MAGICLINKS (no /proc/.../fd or /proc/.../root
 * jumps out of it), and optionally RESOLVE_NO_SYMLINKS.
 */
final class OpenedFile implements AutoCloseable {
  static final long SYS_OPENAT = 257;
  static final long SYS_OPENAT2 = 437;
  static final long AT_FDCWD = -100;
  static final long O_DIRECTORY = 0200000;
  static final long O_CLOEXEC = 02000000;
  static final long O_PATH = 010000000;
  static final long RESOLVE_NO_SYMLINKS = 0x04;
  static final long RESOLVE_NO_MAGICLINKS = 0x02;
  static final long RESOLVE_IN_ROOT = 0x10;
  /** sizeof(struct open_how): flags, mode, resolve. */
  static final int OPEN_HOW_SIZE = 24;
  /** PATH_MAX: longer names are refused rather than handed to the kernel. */
  static final int MAX_PATH = 4096;
  /** With O_PATH the kernel ignores the access flags; O_CLOEXEC keeps it out of children. */
  private static final long PATH_FLAGS = O_PATH | O_CLOEXEC;

  /** Device (kernel st_dev encoding), inode and whether it is a regular file. */
  record Identity(long dev, long inode, boolean regular) {}

  private final int fd;

  private OpenedFile(int fd) {
    this.fd = fd;
  }

  /** Opens {@code path} as given (e.g. a /proc/PID/map_files link, meant to be followed). */
  static OpenedFile open(Path path) throws SyscallException {
    Pointer name = cString(path.toString());
    long fd = DescriptorLimit.open(() -> Syscalls.check(Native.libc().syscall(SYS_OPENAT,
        AT_FDCWD, name.address(), PATH_FLAGS, 0, 0, 0), "openat(" + path + ", O_PATH)",
        SyscallException.Area.OTHER));
    return new OpenedFile((int) fd);
  }

  /**
   * Opens {@code path} as the process whose root directory is {@code root} sees it, never
   * leaving that root: a symlink to "/x" means root/x, ".." stops at root, magic links fail.
   */
  static OpenedFile openInRoot(Path root, String path) throws SyscallException {
    return openInRoot(root, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
  }

  /**
   * As {@link #openInRoot(Path, String)}, and no symlink at all in any component of {@code path}
   * (the open fails with ELOOP): for files whose name the target chose.
   */
  static OpenedFile openInRootNoSymlinks(Path root, String path) throws SyscallException {
    return openInRoot(root, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS);
  }

  private static OpenedFile openInRoot(Path root, String path, long resolve)
      throws SyscallException {
    Pointer rootName = cString(root.toString());
    long dirFd = DescriptorLimit.open(() -> Syscalls.check(Native.libc().syscall(SYS_OPENAT,
        AT_FDCWD, rootName.address(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0, 0),
        "openat(" + root + ")", SyscallException.Area.OTHER));
    try {
      Pointer name = cString(path);
      Pointer how = Native.allocate(OPEN_HOW_SIZE);
      how.putLong(0, PATH_FLAGS);
      how.putLong(8, 0);
      how.putLong(16, resolve);
      String call = "openat2(" + root + ", " + path + ", O_PATH, RESOLVE_IN_ROOT"
          + ((resolve & RESOLVE_NO_SYMLINKS) != 0 ? "|RESOLVE_NO_SYMLINKS)" : ")");
      long fd = DescriptorLimit.open(() -> Syscalls.check(Native.libc().syscall(SYS_OPENAT2,
          dirFd, name.address(), how.address(), OPEN_HOW_SIZE, 0, 0), call,
          SyscallException.Area.OTHER));
      return new OpenedFile((int) fd);
    } finally {
      Native.libc().close((int) dirFd);
    }
  }

  /**
   * A path naming this open file itself (valid while it is open); opening it for reading reopens
   * this very inode. Only do that after {@link #identity()} showed a regular file.
   */
  Path path() {
    return Path.of("/proc/self/fd/" + fd);
  }

  /** fstat of the open descriptor (stat through /proc/self/fd/N reports the same inode). */
  Identity identity() throws IOException {
    Map<String, Object> attrs = Files.readAttributes(path(), "unix:dev,ino,mode");
    int mode = (Integer) attrs.get("mode");
    return new Identity((Long) attrs.get("dev"), (Long) attrs.get("ino"),
        (mode & 0170000) == 0100000);
  }

  @Override
  public void close() {
    Native.libc().close(fd);
  }

  private static Pointer cString(String s) throws SyscallException {
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    if (bytes.length >= MAX_PATH || s.indexOf('\0') >= 0) {
      throw new SyscallException("open(" + s + ")", Errno.EINVAL,
          SyscallException.Area.OTHER);
    }
    Pointer p = Native.allocate(bytes.length + 1);
    p.put(0, bytes, 0, bytes.length);
    p.putByte(bytes.length, (byte) 0);
    return p;
  }
}
