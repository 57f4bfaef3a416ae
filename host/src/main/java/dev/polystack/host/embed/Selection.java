package dev.polystack.host.embed;

import dev.polystack.host.pipeline.ProcessSelection;
import java.util.HashSet;
import java.util.Objects;
import java.util.Set;
import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;

/**
 * Which processes a {@link Profiler} profiles: every user process of the host ({@link
 * #hostWide()}), or the processes given by pid plus those for which every name criterion holds:
 * executable name ({@code comm}, as {@code pgrep -x}), command line ({@code match}, a regular
 * expression found in the first 4096 characters, as {@code pgrep -f}) and cgroup v2 path (the
 * process's cgroup or one below it). Processes selected by name bring the processes they create.
 * Kernel threads and the JVM that runs the profiler are never profiled.
 *
 * <p>An empty string means "no such criterion". Combine criteria with the {@code with...}
 * methods: {@code Selection.byComm("nginx").withCgroup("system.slice/nginx.service")}.
 *
 * @param pids processes to profile, by pid in the profiler's pid namespace (not the processes
 *     they create)
 * @param comm executable name, or empty
 * @param match regular expression on the command line, or empty
 * @param cgroup cgroup v2 path relative to {@code /sys/fs/cgroup} (or the full path), or empty
 */
public record Selection(Set<Integer> pids, String comm, String match, String cgroup) {

  /** Validates every criterion; the cgroup's existence is checked by {@link Profiler#check()}. */
  public Selection {
    pids = Set.copyOf(Objects.requireNonNull(pids, "pids"));
    Objects.requireNonNull(comm, "comm");
    Objects.requireNonNull(match, "match");
    Objects.requireNonNull(cgroup, "cgroup");
    for (int pid : pids) {
      if (pid <= 0) {
        throw new IllegalArgumentException("pid " + pid + ": a process id is a positive number");
      }
    }
    if (!comm.isEmpty() && comm.isBlank() || !cgroup.isEmpty() && cgroup.isBlank()) {
      throw new IllegalArgumentException("comm and cgroup are empty (no criterion) or name"
          + " something, not blanks");
    }
    if (!match.isEmpty()) {
      try {
        Pattern.compile(match);
      } catch (PatternSyntaxException e) {
        throw new IllegalArgumentException("match " + match + ": not a regular expression: "
            + e.getDescription(), e);
      }
    }
  }

  /** Every user process of the host. */
  public static Selection hostWide() {
    return new Selection(Set.of(), "", "", "");
  }

  /** These processes. */
  public static Selection ofPids(int... pids) {
    return hostWide().withPids(pids);
  }

  /** Processes whose executable name is {@code comm}, and those they create. */
  public static Selection byComm(String comm) {
    return hostWide().withComm(comm);
  }

  /** Processes whose command line matches {@code regex}, and those they create. */
  public static Selection byMatch(String regex) {
    return hostWide().withMatch(regex);
  }

  /** Processes in cgroup v2 {@code path} or below it, and those they create. */
  public static Selection byCgroup(String path) {
    return hostWide().withCgroup(path);
  }

  /** This selection plus {@code morePids}. */
  public Selection withPids(int... morePids) {
    Set<Integer> all = new HashSet<>(pids);
    for (int pid : morePids) {
      all.add(pid);
    }
    return new Selection(all, comm, match, cgroup);
  }

  /** This selection with the executable name criterion {@code name}. */
  public Selection withComm(String name) {
    return new Selection(pids, name, match, cgroup);
  }

  /** This selection with the command line criterion {@code regex}. */
  public Selection withMatch(String regex) {
    return new Selection(pids, comm, regex, cgroup);
  }

  /** This selection with the cgroup criterion {@code path}. */
  public Selection withCgroup(String path) {
    return new Selection(pids, comm, match, path);
  }

  /** Whether this is every user process of the host. */
  public boolean isHostWide() {
    return pids.isEmpty() && comm.isEmpty() && match.isEmpty() && cgroup.isEmpty();
  }

  ProcessSelection toPipeline() {
    if (isHostWide()) {
      return ProcessSelection.hostWide();
    }
    return new ProcessSelection(pids, comm, match.isEmpty() ? null : Pattern.compile(match),
        cgroup);
  }
}
