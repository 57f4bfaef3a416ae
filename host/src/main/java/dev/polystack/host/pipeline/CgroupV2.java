package dev.polystack.host.pipeline;

import dev.polystack.host.bpf.TickCapture;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Where the cgroup v2 hierarchy is mounted ({@code /sys/fs/cgroup}, or {@code
 * /sys/fs/cgroup/unified} on a host that mounts v1 controllers beside it), and a cgroup's
 * identity as the kernel's tick-time program compares it.
 */
public final class CgroupV2 {
  /** Bytes of /proc/self/mountinfo read: hosts with thousands of mounts are cut, not stalled. */
  static final int MOUNTINFO_BYTES = 1 << 20;
  static final Path DEFAULT_MOUNT = Path.of("/sys/fs/cgroup");

  private CgroupV2() {}

  /** The cgroup2 mount point from /proc/self/mountinfo; /sys/fs/cgroup when none is listed. */
  public static Path mount() {
    byte[] head;
    try (InputStream in = Files.newInputStream(Path.of("/proc/self/mountinfo"))) {
      head = in.readNBytes(MOUNTINFO_BYTES);
    } catch (IOException e) {
      return DEFAULT_MOUNT;
    }
    for (String line : new String(head, StandardCharsets.UTF_8).split("\n")) {
      int dash = line.indexOf(" - ");
      String[] left = line.split(" ");
      if (dash > 0 && line.substring(dash + 3).startsWith("cgroup2 ") && left.length > 4) {
        return Path.of(left[4].replace("\\040", " "));
      }
    }
    return DEFAULT_MOUNT;
  }

  /**
   * {@code path} as a cgroup v2 path from the root ({@code /system.slice/x.service}): given
   * relative to the hierarchy, or absolute under its mount or under /sys/fs/cgroup.
   */
  public static String normalize(String path) {
    String p = path.strip();
    if (p.isEmpty()) {
      return "";
    }
    for (String prefix : new String[] {mount().toString(), DEFAULT_MOUNT.toString()}) {
      if (p.equals(prefix) || p.startsWith(prefix + "/")) {
        p = p.substring(prefix.length());
        break;
      }
    }
    return fromRoot(p);
  }

  /**
   * {@code path}, relative to the hierarchy's root as /proc/PID/cgroup gives it, as {@code
   * /a/b}; unlike {@link #normalize} it reads no mount table (it runs for every new process).
   */
  static String fromRoot(String path) {
    String p = path.strip();
    if (p.isEmpty()) {
      return "";
    }
    while (p.startsWith("/")) {
      p = p.substring(1);
    }
    while (p.endsWith("/")) {
      p = p.substring(0, p.length() - 1);
    }
    return "/" + p;
  }

  /** The directory of {@code cgroup} (a normalized path). */
  public static Path directory(String cgroup) {
    return cgroup.equals("/") ? mount() : mount().resolve(cgroup.substring(1));
  }

  /** The kernel's id of {@code cgroup} (its directory's inode) and its depth; empty if unreadable. */
  static Optional<TickCapture.Cgroup> identity(String cgroup) {
    try {
      Object ino = Files.getAttribute(directory(cgroup), "unix:ino");
      int level = cgroup.equals("/") ? 0 : cgroup.substring(1).split("/").length;
      return Optional.of(new TickCapture.Cgroup(((Number) ino).longValue(), level));
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
