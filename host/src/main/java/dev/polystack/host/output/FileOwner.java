package dev.polystack.host.output;

import dev.polystack.host.sys.Credentials;
import java.util.Map;
import java.util.Optional;

/**
 * The user and group that get what polystack writes: the invoking user under {@code sudo}
 * ({@code SUDO_UID}/{@code SUDO_GID}), so that {@code sudo polystack record} leaves a profile
 * its user can open without root, as tools run as that user expect (docs/operations.md,
 * "Output files").
 */
public record FileOwner(int uid, int gid) {
  public FileOwner {
    if (uid < 0 || gid < 0) {
      throw new IllegalArgumentException("uid and gid must be >= 0, got " + uid + ":" + gid);
    }
  }

  /**
   * The sudo caller when this process is root started through sudo; empty otherwise (files then
   * belong to whoever runs polystack). Malformed or root values are ignored.
   */
  public static Optional<FileOwner> sudoCaller(Credentials credentials, Map<String, String> env) {
    if (!credentials.root()) {
      return Optional.empty();
    }
    int uid = id(env.get("SUDO_UID"));
    int gid = id(env.get("SUDO_GID"));
    if (uid <= 0 || gid < 0) {
      return Optional.empty();
    }
    return Optional.of(new FileOwner(uid, gid));
  }

  private static int id(String value) {
    if (value == null || value.isEmpty() || value.length() > 10 || !value.chars()
        .allMatch(c -> c >= '0' && c <= '9')) {
      return -1;
    }
    long id = Long.parseLong(value);
    return id > Integer.MAX_VALUE ? -1 : (int) id;
  }
}
