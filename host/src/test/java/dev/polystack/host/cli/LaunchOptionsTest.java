package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.polystack.host.launch.Accounts;
import dev.polystack.host.launch.Credentials;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Who a launched command runs as: the sudo caller by default when polystack is root, what
 * --user/--group say otherwise, polystack's own user when nothing applies. Uses the real
 * password database (nobody, daemon and root exist on every Debian system).
 */
class LaunchOptionsTest {
  private static final Map<String, String> SUDO_BY_NOBODY =
      Map.of("SUDO_UID", "65534", "SUDO_GID", "65534", "SUDO_USER", "nobody");

  private final List<String> notes = new ArrayList<>();

  private static LaunchOptions options(String user, String group) {
    LaunchOptions o = new LaunchOptions();
    o.user = user;
    o.group = group;
    return o;
  }

  @Test
  void rootUnderSudoLaunchesAsTheCallerAndSaysSo() {
    Credentials as = options(null, null).resolve(SUDO_BY_NOBODY, 0, notes::add);
    assertEquals(new Credentials(65534, 65534, "nobody", "/nonexistent"), as);
    assertEquals(List.of("running the command as nobody (uid 65534), gid 65534, the user who"
        + " ran sudo; --user root runs it as root"), notes);
  }

  @Test
  void plainRootAndNonRootKeepTheirOwnUser() {
    assertNull(options(null, null).resolve(Map.of(), 0, notes::add));
    assertNull(options(null, null).resolve(SUDO_BY_NOBODY, 1000, notes::add),
        "SUDO_UID means nothing to a process that is not root");
    assertNull(options(null, null).resolve(Map.of("SUDO_UID", "0", "SUDO_GID", "0"), 0,
        notes::add), "sudo by root");
    assertEquals(List.of(), notes);
  }

  @Test
  void userRootKeepsRootUnderSudo() {
    assertNull(options("root", null).resolve(SUDO_BY_NOBODY, 0, notes::add));
    assertNull(options("0", null).resolve(SUDO_BY_NOBODY, 0, notes::add));
    assertEquals(List.of(), notes);
  }

  @Test
  void userAndGroupByNameOrNumber() {
    Accounts.User daemon = Accounts.userByName("daemon").orElseThrow();
    assertEquals(Credentials.of(daemon, daemon.gid()),
        options("daemon", null).resolve(Map.of(), 0, notes::add));
    assertEquals(new Credentials(65534, 1, "nobody", "/nonexistent"),
        options("nobody", "daemon").resolve(SUDO_BY_NOBODY, 0, notes::add));
    assertEquals(new Credentials(65534, 7, "nobody", "/nonexistent"),
        options("65534", "7").resolve(Map.of(), 0, notes::add));
    assertEquals(new Credentials(0, 1, "root", "/root"),
        options(null, "daemon").resolve(Map.of(), 0, notes::add), "root with another group");
    assertEquals(List.of(), notes);
  }

  @Test
  void mistakesAreOneClearLine() {
    assertEquals("--user no-such-user-polystack: no such user", assertThrows(
        UsageException.class, () -> options("no-such-user-polystack", null)
            .resolve(Map.of(), 0, notes::add)).getMessage());
    assertEquals("--group no-such-group-polystack: no such group", assertThrows(
        UsageException.class, () -> options("nobody", "no-such-group-polystack")
            .resolve(Map.of(), 0, notes::add)).getMessage());
    assertEquals("--user 4242424: uid 4242424 has no password entry; give --group GROUP too",
        assertThrows(UsageException.class, () -> options("4242424", null)
            .resolve(Map.of(), 0, notes::add)).getMessage());
    assertEquals(new Credentials(4242424, 4242424, "", ""),
        options("4242424", "4242424").resolve(Map.of(), 0, notes::add));
    assertEquals("SUDO_UID=abc is not a user id: give --user USER (or --user root to run the"
        + " command as root)", assertThrows(CommandFailedException.class,
            () -> options(null, null).resolve(Map.of("SUDO_UID", "abc"), 0, notes::add))
        .getMessage());
    assertEquals("--user and --group need root: polystack runs as uid 1000", assertThrows(
        CommandFailedException.class, () -> options("nobody", null)
            .resolve(Map.of(), 1000, notes::add)).getMessage());
    assertEquals("--user and --group apply to a command launched after --, not to --pid",
        assertThrows(UsageException.class, () -> options("nobody", null).checkLaunching(false))
            .getMessage());
    assertEquals("--user applies to a command launched after -- and to --comm, --match and"
        + " --subprocesses, not to --pid alone", assertThrows(UsageException.class,
            () -> options("nobody", null).checkSelecting(false, false)).getMessage());
    assertEquals("--group applies to a command launched after --, not to --pid, --comm or"
        + " --match", assertThrows(UsageException.class,
            () -> options(null, "nogroup").checkSelecting(false, true)).getMessage());
    options("nobody", null).checkSelecting(false, true); // --comm/--match/--subprocesses
    assertEquals("--user no-such-user-polystack: no such user", assertThrows(
        UsageException.class, () -> options("no-such-user-polystack", null)
            .checkSelecting(false, true)).getMessage());
  }
}
