package dev.polystack.host.bpf;

import static java.nio.charset.StandardCharsets.UTF_8;

import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import java.lang.ref.Reference;
import java.nio.file.Path;
import jnr.ffi.Pointer;

/**
 * A uprobe_multi session link: one program on several offsets of one file, for one process,
 * created with the raw {@code bpf(BPF_LINK_CREATE)} because libbpf 1.1 has no API for it. Owned
 * by its file descriptor: when it closes (also when polystack is killed) the kernel removes the
 * breakpoints from the target's code (docs/allocations.md).
 */
public final class UprobeLink implements AutoCloseable {
  private static final long NR_BPF = 321;
  private static final long BPF_LINK_CREATE = 28;
  static final int BPF_TRACE_UPROBE_SESSION = 57;
  private static final int ATTR_SIZE = 64;
  /** The kernel's ENOTSUPP: its instruction decoder refuses the probed bytes. */
  public static final int ENOTSUPP = 524;

  private final int fd;
  private boolean closed;

  private UprobeLink(int fd) {
    this.fd = fd;
  }

  /**
   * Attaches {@code programFd} at each file offset of {@code file}, with the matching cookie,
   * for the threads of process {@code pid}.
   */
  static UprobeLink attach(int programFd, Path file, long[] offsets, long[] cookies, int pid)
      throws BpfLoadException {
    return attach(programFd, file, offsets, cookies, pid, "allocation profiles");
  }

  /** {@link #attach} for {@code feature}, which the refusal of an old kernel names. */
  static UprobeLink attach(int programFd, Path file, long[] offsets, long[] cookies, int pid,
      String feature) throws BpfLoadException {
    if (offsets.length == 0 || offsets.length != cookies.length) {
      throw new IllegalArgumentException(offsets.length + " offsets, " + cookies.length
          + " cookies");
    }
    byte[] name = (file.toString() + "\0").getBytes(UTF_8);
    Pointer path = Bpf.allocate(name.length);
    path.put(0, name, 0, name.length);
    Pointer offs = Bpf.allocate(8 * offsets.length);
    Pointer cooks = Bpf.allocate(8 * cookies.length);
    for (int i = 0; i < offsets.length; i++) {
      offs.putLong(8L * i, offsets[i]);
      cooks.putLong(8L * i, cookies[i]);
    }
    Pointer attr = Bpf.allocate(ATTR_SIZE);
    attr.setMemory(0, ATTR_SIZE, (byte) 0);
    attr.putInt(0, programFd);
    attr.putInt(8, BPF_TRACE_UPROBE_SESSION);
    attr.putLong(16, path.address());
    attr.putLong(24, offs.address());
    attr.putLong(40, cooks.address());
    attr.putInt(48, offsets.length);
    attr.putInt(56, pid);
    long fd = Native.libc().syscall(NR_BPF, BPF_LINK_CREATE, attr.address(), ATTR_SIZE, 0, 0, 0);
    int errno = Native.errno();
    Reference.reachabilityFence(path);
    Reference.reachabilityFence(offs);
    Reference.reachabilityFence(cooks);
    Reference.reachabilityFence(attr);
    if (fd < 0) {
      String advice;
      if (errno == ENOTSUPP) {
        advice = "the kernel cannot put a uprobe on the instruction at one of these offsets (an"
            + " offset inside an instruction, or one uprobes cannot single-step)";
      } else if (errno == Errno.ENOENT || errno == Errno.ESRCH) {
        advice = "the file or the process is gone";
      } else if (errno == Errno.EINVAL || errno == Errno.EOPNOTSUPP) {
        advice = feature + " need a kernel with uprobe sessions (Linux 6.13 or later)";
      } else {
        advice = "run polystack as root (or grant CAP_BPF and CAP_PERFMON)";
      }
      throw BpfLoadException.of("attaching uprobes to " + file + " for process " + pid, errno,
          "", advice);
    }
    return new UprobeLink((int) fd);
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      Native.libc().close(fd);
    }
  }
}
