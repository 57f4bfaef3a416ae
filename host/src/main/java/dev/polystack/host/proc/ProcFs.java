package dev.polystack.host.proc;

import java.nio.file.Path;

/**
 * Entry point to the proc filesystem. The root is configurable so that tests and tools can point
 * it at a directory with the same layout (e.g. prepared malformed files).
 */
public interface ProcFs {

  /** The host's /proc with default limits. */
  static ProcFs system() {
    return at(Path.of("/proc"), ProcLimits.defaults());
  }

  static ProcFs at(Path root) {
    return at(root, ProcLimits.defaults());
  }

  static ProcFs at(Path root, ProcLimits limits) {
    return new DefaultProcFs(root, limits);
  }

  Path root();

  ProcLimits limits();

  /**
   * A view of one process. Does not check that the process exists; reads will report that.
   *
   * @throws IllegalArgumentException if {@code pid} is not positive
   */
  ProcessView forPid(int pid);
}
