package dev.polystack.host.proc;

import java.nio.file.Path;
import java.util.Objects;

final class DefaultProcFs implements ProcFs {
  private final Path root;
  private final ProcLimits limits;

  DefaultProcFs(Path root, ProcLimits limits) {
    this.root = Objects.requireNonNull(root, "root");
    this.limits = Objects.requireNonNull(limits, "limits");
  }

  @Override
  public Path root() {
    return root;
  }

  @Override
  public ProcLimits limits() {
    return limits;
  }

  @Override
  public ProcessView forPid(int pid) {
    if (pid <= 0) {
      throw new IllegalArgumentException("pid must be positive: " + pid);
    }
    return new DefaultProcessView(root.resolve(Integer.toString(pid)), pid, limits);
  }

  @Override
  public String toString() {
    return "ProcFs{" + root + "}";
  }
}
