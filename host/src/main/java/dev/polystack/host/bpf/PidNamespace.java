package dev.polystack.host.bpf;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The pid namespace polystack runs in, as the kernel's helper bpf_get_ns_current_pid_tgid names
 * it (the nsfs device and inode of /proc/self/ns/pid). Outside the initial namespace the capture
 * program matches targets by the pids polystack sees, not the kernel's: a pid read from its own
 * /proc inside a container is never taken for the host process that has the same number.
 */
record PidNamespace(long device, long inode) {
  /** PROC_PID_INIT_INO: the initial pid namespace's inode, fixed by the kernel. */
  static final long INITIAL_INODE = 0xEFFFFFFCL;

  boolean isInitial() {
    return inode == INITIAL_INODE;
  }

  /** This process's pid namespace; the initial one when /proc/self/ns/pid cannot be read. */
  static PidNamespace ofThisProcess() {
    Path ns = Path.of("/proc/self/ns/pid");
    try {
      long dev = ((Number) Files.getAttribute(ns, "unix:dev")).longValue();
      long ino = ((Number) Files.getAttribute(ns, "unix:ino")).longValue();
      return new PidNamespace(dev, ino);
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      return new PidNamespace(0, INITIAL_INODE);
    }
  }
}
