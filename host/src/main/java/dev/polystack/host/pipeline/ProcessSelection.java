package dev.polystack.host.pipeline;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessView;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import com.google.re2j.Pattern;

/**
 * Which processes a pipeline profiles: every user process of the host (no criterion), or the
 * processes given by pid plus those whose name criteria all hold: executable name ({@code
 * comm}, as {@code pgrep -x}), command line ({@code match}, as {@code pgrep -f}) and cgroup v2
 * path (the process's cgroup or one below it).
 *
 * @param everyProcess every user process (then no criterion is given); otherwise only what the
 *     criteria select, which may be nothing at first (a command launched later is selected
 *     then)
 * @param cgroup a cgroup v2 path ({@code system.slice/nginx.service}, or under
 *     {@code /sys/fs/cgroup}), kept as {@code /system.slice/nginx.service}; empty: no criterion
 */
public record ProcessSelection(boolean everyProcess, Set<Integer> pids, String comm, Pattern match,
    String cgroup) {
  /** Bytes of a command line a {@code match} looks at: a hostile process cannot stall it. */
  static final int MATCH_BYTES = 4096;
  /** Bytes of /proc/PID/cgroup read: a cgroup path is bounded by PATH_MAX. */
  static final int CGROUP_BYTES = 8192;

  /** The processes these criteria select (none given: none selected yet). */
  public ProcessSelection(Set<Integer> pids, String comm, Pattern match, String cgroup) {
    this(false, pids, comm, match, cgroup);
  }

  public ProcessSelection {
    pids = Set.copyOf(pids);
    Objects.requireNonNull(comm, "comm");
    cgroup = normalize(Objects.requireNonNull(cgroup, "cgroup"));
    for (int pid : pids) {
      if (pid <= 0) {
        throw new IllegalArgumentException("pid must be positive: " + pid);
      }
    }
    if (everyProcess && (!pids.isEmpty() || !comm.isEmpty() || match != null || !cgroup.isEmpty())) {
      throw new IllegalArgumentException("a host-wide selection takes no criterion");
    }
  }

  /** Every user process of the host. */
  public static ProcessSelection hostWide() {
    return new ProcessSelection(true, Set.of(), "", null, "");
  }

  public boolean isHostWide() {
    return everyProcess;
  }

  /** Whether processes may join by name, cgroup or command line (checked at every exec). */
  public boolean byName() {
    return !comm.isEmpty() || match != null || !cgroup.isEmpty();
  }

  /**
   * The cgroup as the capture program can select it at each tick, when it is the only
   * criterion (a process moved into it later is then captured from its next tick); empty when
   * another criterion is given or the cgroup's directory cannot be read.
   */
  public java.util.Optional<dev.polystack.host.bpf.TickCapture.Cgroup> kernelCgroup() {
    if (cgroup.isEmpty() || !pids.isEmpty() || !comm.isEmpty() || match != null) {
      return java.util.Optional.empty();
    }
    return CgroupV2.identity(cgroup); // else selected at exec (#selects)
  }

  /** Whether {@code pid} is selected now; false for a process that is gone or unreadable. */
  public boolean selects(ProcFs proc, int pid) {
    if (isHostWide() || pids.contains(pid)) {
      return true;
    }
    if (!byName()) {
      return false;
    }
    ProcessView view = proc.forPid(pid);
    try {
      // comm of the leader: the 16 bytes of /proc/PID/comm, not all of /proc/PID/status; this
      // runs at every exec on the host.
      if (!comm.isEmpty() && !comm.equals(view.threadName(pid))) {
        return false;
      }
      if (match != null) {
        String line = String.join(" ", view.cmdline().arguments());
        if (line.length() > MATCH_BYTES) {
          line = line.substring(0, MATCH_BYTES);
        }
        if (!match.matcher(line).find()) {
          return false;
        }
      }
      return cgroup.isEmpty() || inCgroup(cgroupOf(proc, pid), cgroup);
    } catch (ProcReadException e) {
      return false;
    }
  }

  /** The process's cgroup v2 path ({@code 0::/PATH}) as {@code /PATH}, or empty when unreadable. */
  static String cgroupOf(ProcFs proc, int pid) {
    Path file = proc.root().resolve(Integer.toString(pid)).resolve("cgroup");
    byte[] head;
    try (var in = Files.newInputStream(file)) {
      head = in.readNBytes(CGROUP_BYTES);
    } catch (IOException e) {
      return "";
    }
    for (String line : new String(head, StandardCharsets.UTF_8).split("\n")) {
      if (line.startsWith("0::")) {
        return CgroupV2.fromRoot(line.substring(3)); // the kernel's path: no mount to strip
      }
    }
    return "";
  }

  static boolean inCgroup(String processCgroup, String wanted) {
    return !processCgroup.isEmpty() && (wanted.equals("/") || processCgroup.equals(wanted)
        || processCgroup.startsWith(wanted + "/"));
  }

  private static String normalize(String path) {
    return CgroupV2.normalize(path);
  }

  /** What the startup line says is profiled. */
  public String describe() {
    if (isHostWide()) {
      return "every process on this host";
    }
    List<String> parts = new java.util.ArrayList<>();
    if (!pids.isEmpty()) {
      parts.add("pid " + pids.stream().sorted().map(String::valueOf)
          .collect(java.util.stream.Collectors.joining(",")));
    }
    if (!comm.isEmpty()) {
      parts.add("--comm " + comm);
    }
    if (match != null) {
      parts.add("--match " + match.pattern());
    }
    if (!cgroup.isEmpty()) {
      parts.add("--cgroup " + cgroup);
    }
    return "processes selected by " + String.join(" and ", parts);
  }
}
