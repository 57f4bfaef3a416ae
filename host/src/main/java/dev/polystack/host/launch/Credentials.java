package dev.polystack.host.launch;

import java.util.Objects;

/**
 * Who a launched command runs as when that is not polystack's own user.
 *
 * @param uid real, effective and saved user id
 * @param gid real, effective and saved group id
 * @param user the name in the password database, or empty when the uid has no entry (then the
 *     command gets no supplementary groups and keeps HOME, USER and LOGNAME as they are)
 * @param home the home directory from the password database, or empty
 */
public record Credentials(int uid, int gid, String user, String home) {
  public Credentials {
    if (uid < 0 || gid < 0) {
      throw new IllegalArgumentException("uid and gid must not be negative: " + uid + ":" + gid);
    }
    Objects.requireNonNull(user, "user");
    Objects.requireNonNull(home, "home");
  }

  /** {@code user} with {@code gid} as its group (its own primary group, or one chosen). */
  public static Credentials of(Accounts.User user, int gid) {
    return new Credentials(user.uid(), gid, user.name(), user.home());
  }

  /** The user as people say it: the name, else the number. */
  public String describe() {
    return (user.isEmpty() ? "uid " + uid : user + " (uid " + uid + ")") + ", gid " + gid;
  }
}
