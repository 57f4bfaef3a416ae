package dev.polystack.host.proc;

import java.nio.file.Path;
import java.util.Optional;

/**
 * A process is its pid plus its start time plus its pid namespace, never a pid alone: a pid is
 * reused as soon as its process is reaped, by any user (docs/reliability.md, "A process is its
 * identity").
 *
 * @param pid the process id as this polystack's /proc shows it
 * @param startTicks field 22 of {@code /proc/PID/stat}: clock ticks after boot
 * @param pidNamespaceInode inode of {@code /proc/PID/ns/pid}
 */
public record ProcessIdentity(int pid, long startTicks, long pidNamespaceInode) {

  private static final String NS_PREFIX = "pid:[";

  public ProcessIdentity {
    if (pid <= 0) {
      throw new IllegalArgumentException("pid must be positive: " + pid);
    }
    if (startTicks < 0) {
      throw new IllegalArgumentException("startTicks must not be negative: " + startTicks);
    }
  }

  /**
   * Reads /proc/PID/stat field 22 (starttime, parsed after the last ')' because comm may hold ')'
   * and spaces) and the inode of /proc/PID/ns/pid; empty when the process is gone or unreadable.
   */
  public static Optional<ProcessIdentity> read(ProcFs proc, int pid) {
    if (pid <= 0) {
      throw new IllegalArgumentException("pid must be positive: " + pid);
    }
    ProcessView view = proc.forPid(pid);
    try {
      long start = view.stat().startTime();
      long ns = namespaceInode(proc.root().resolve(Integer.toString(pid)), pid);
      // The stat is read again: had the pid been reused between the two reads, the namespace
      // would belong to the newcomer.
      if (view.stat().startTime() != start) {
        return Optional.empty();
      }
      return Optional.of(new ProcessIdentity(pid, start, ns));
    } catch (ProcReadException e) {
      return Optional.empty();
    }
  }

  /** True while /proc/PID still describes this same process (same start time and namespace). */
  public boolean isCurrent(ProcFs proc) {
    return read(proc, pid).map(this::equals).orElse(false);
  }

  /** The link reads {@code pid:[INODE]}; its inode is what stat(2) of the link's target gives. */
  private static long namespaceInode(Path processDir, int pid) throws ProcReadException {
    Path link = processDir.resolve("ns").resolve("pid");
    String target =
        ProcFiles.readLink(
            link, "pid namespace", new ProcFiles.Subject("process " + pid, processDir));
    if (!target.startsWith(NS_PREFIX) || !target.endsWith("]")
        || target.length() <= NS_PREFIX.length() + 1
        || target.length() > NS_PREFIX.length() + 21) {
      throw ProcReadException.malformed("pid namespace", link, "not pid:[inode]: " + target);
    }
    String digits = target.substring(NS_PREFIX.length(), target.length() - 1);
    try {
      if (!digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
        throw new NumberFormatException(digits);
      }
      return Long.parseUnsignedLong(digits);
    } catch (NumberFormatException e) {
      throw ProcReadException.malformed("pid namespace", link, "bad inode: " + target);
    }
  }

  @Override
  public String toString() {
    return pid + "@" + startTicks + "/ns" + Long.toUnsignedString(pidNamespaceInode);
  }
}
