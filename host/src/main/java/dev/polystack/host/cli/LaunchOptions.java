package dev.polystack.host.cli;

import dev.polystack.host.launch.Accounts;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.launch.Launcher;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.function.Consumer;
import picocli.CommandLine.Option;

/**
 * Who a command launched after {@code --} runs as. polystack runs as root; the program it starts
 * should not, unless asked: by default it runs as the user who ran sudo (docs/operations.md,
 * "Launched commands").
 */
final class LaunchOptions {

  @Option(names = "--user", paramLabel = "USER",
      description = "Run the launched command as this user (name or uid). Default: the user who"
          + " ran sudo (SUDO_UID), else polystack's own; --user root keeps root. With --comm,"
          + " --match or --subprocesses: select only this user's processes.")
  String user;

  @Option(names = "--group", paramLabel = "GROUP",
      description = "Run the launched command with this group (name or gid; default: the"
          + " user's primary group).")
  String group;

  /** Refuses --user and --group where nothing is launched. */
  void checkLaunching(boolean launching) {
    if (!launching && (user != null || group != null)) {
      throw new UsageException("--user and --group apply to a command launched after --, not"
          + " to --pid");
    }
  }

  /**
   * For commands that also select processes by name (record): refuses --user where it neither
   * chooses who a command runs as nor whose processes are selected ({@code selecting}: --comm,
   * --match or --subprocesses), and --group where nothing is launched.
   */
  void checkSelecting(boolean launching, boolean selecting) {
    if (!launching && group != null) {
      throw new UsageException("--group applies to a command launched after --, not to --pid,"
          + " --comm or --match");
    }
    if (!launching && !selecting && user != null) {
      throw new UsageException("--user applies to a command launched after -- and to --comm,"
          + " --match and --subprocesses, not to --pid alone");
    }
    selectedUid(); // an unknown user is a usage error before anything is attached
  }

  /** The user id --user names, for selecting processes; empty without --user. */
  OptionalLong selectedUid() {
    if (user == null) {
      return OptionalLong.empty();
    }
    OptionalInt number = id(user);
    if (number.isPresent()) {
      return OptionalLong.of(number.getAsInt());
    }
    return OptionalLong.of(Accounts.userByName(user).orElseThrow(() -> new UsageException(
        "--user " + user + ": no such user")).uid());
  }

  /**
   * The credentials to launch with, or null for polystack's own.
   *
   * @param env the environment (SUDO_UID, SUDO_GID)
   * @param euid polystack's effective user id
   * @param note gets one line when the sudo caller is chosen by default
   */
  Credentials resolve(Map<String, String> env, int euid, Consumer<String> note) {
    Credentials as = user == null && group == null ? sudoCaller(env, euid, note) : chosen(euid);
    if (as != null && !Launcher.canRunAs()) {
      throw new CommandFailedException("running the command as " + as.describe() + " needs"
          + " setpriv (util-linux), which is not installed: install util-linux, or give"
          + " --user root");
    }
    return as;
  }

  private static Credentials sudoCaller(Map<String, String> env, int euid,
      Consumer<String> note) {
    String sudoUid = env.getOrDefault("SUDO_UID", "").trim();
    if (euid != 0 || sudoUid.isEmpty()) {
      return null;
    }
    int uid = id(sudoUid).orElseThrow(() -> new CommandFailedException("SUDO_UID=" + sudoUid
        + " is not a user id: give --user USER (or --user root to run the command as root)"));
    if (uid == 0) {
      return null;
    }
    Optional<Accounts.User> entry = Accounts.userById(uid);
    String sudoGid = env.getOrDefault("SUDO_GID", "").trim();
    OptionalInt gid = id(sudoGid);
    if (gid.isEmpty() && entry.isPresent()) {
      gid = OptionalInt.of(entry.get().gid());
    }
    if (gid.isEmpty()) {
      throw new CommandFailedException("SUDO_UID=" + uid + " has no group (SUDO_GID unset and"
          + " no password entry): give --user USER --group GROUP, or --user root");
    }
    int g = gid.getAsInt();
    Credentials as = entry.map(u -> Credentials.of(u, g))
        .orElseGet(() -> new Credentials(uid, g, "", ""));
    note.accept("running the command as " + as.describe() + ", the user who ran sudo; --user"
        + " root runs it as root");
    return as;
  }

  private Credentials chosen(int euid) {
    Accounts.User entry = null;
    int uid = euid;
    if (user != null) {
      OptionalInt number = id(user);
      if (number.isPresent()) {
        uid = number.getAsInt();
        entry = Accounts.userById(uid).orElse(null);
      } else {
        entry = Accounts.userByName(user).orElseThrow(() -> new UsageException("--user " + user
            + ": no such user"));
        uid = entry.uid();
      }
    } else {
      entry = Accounts.userById(euid).orElse(null);
    }
    int gid;
    if (group != null) {
      OptionalInt number = id(group);
      gid = number.isPresent() ? number.getAsInt() : Accounts.groupByName(group).orElseThrow(
          () -> new UsageException("--group " + group + ": no such group"));
    } else if (entry != null) {
      gid = entry.gid();
    } else {
      throw new UsageException("--user " + user + ": uid " + uid + " has no password entry;"
          + " give --group GROUP too");
    }
    if (uid == euid && group == null) {
      return null; // polystack's own user: nothing to change
    }
    if (euid != 0) {
      throw new CommandFailedException("--user and --group need root: polystack runs as uid "
          + euid);
    }
    return entry != null ? Credentials.of(entry, gid) : new Credentials(uid, gid, "", "");
  }

  /** A user or group id written as a number, else empty. */
  private static OptionalInt id(String text) {
    if (text.isEmpty() || text.length() > 10 || !text.chars().allMatch(Character::isDigit)) {
      return OptionalInt.empty();
    }
    long v = Long.parseLong(text);
    return v > Integer.MAX_VALUE ? OptionalInt.empty() : OptionalInt.of((int) v);
  }
}
