package dev.polystack.host.sys;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Who this process acts as: its effective uid and effective capability set, as the kernel
 * reports them in {@code /proc/self/status}. Decides whether root-only safety rules apply
 * (docs/reliability.md, "Root safety: outputs and plug-ins").
 *
 * @param euid the effective user id (0 for root)
 * @param capabilities the effective capability mask ({@code CapEff})
 */
public record Credentials(int euid, long capabilities) {

  /** Root: every file check that protects root from a planted file applies. */
  public boolean root() {
    return euid == 0;
  }

  /** Root or any effective capability: code run in this process has more than a user's rights. */
  public boolean privileged() {
    return euid == 0 || capabilities != 0;
  }

  /** This process's credentials; fails only where {@code /proc} is not mounted. */
  public static Credentials ofThisProcess() {
    try {
      return parse(Files.readString(Path.of("/proc/self/status")));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read /proc/self/status", e);
    }
  }

  /** From the text of /proc/PID/status: its {@code Uid:} and {@code CapEff:} lines. */
  static Credentials parse(String status) {
    Integer euid = null;
    Long caps = null;
    for (String line : status.split("\n")) {
      if (line.startsWith("Uid:")) {
        String[] ids = line.substring(4).trim().split("\\s+");
        if (ids.length >= 2) {
          euid = Integer.parseUnsignedInt(ids[1]);
        }
      } else if (line.startsWith("CapEff:")) {
        caps = Long.parseUnsignedLong(line.substring(7).trim(), 16);
      }
    }
    if (euid == null || caps == null) {
      throw new IllegalArgumentException("no Uid or CapEff line in /proc/self/status");
    }
    return new Credentials(euid, caps);
  }
}
