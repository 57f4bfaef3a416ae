package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo's set-up decisions, one host kind at a time (what polystack may install and what it
 * must only name), and the probes of this machine they are made from.
 */
class DemoSetupTest {
  private static final List<String> DEBIAN = List.of("debian");
  private static final String PATH = "/usr/local/bin:/usr/bin:/bin";

  private static DemoSetup.Facts facts(boolean luajit, boolean libbpf, Set<String> dpkg,
      boolean root, boolean apt, List<String> os) {
    return new DemoSetup.Facts(luajit, libbpf, dpkg, root, apt, os, PATH);
  }

  @Test
  void nothingIsDoneWhenLuajitAndLibbpfAreThere() {
    assertTrue(DemoSetup.plan(facts(true, true, Set.of(), true, true, DEBIAN)).nothing());
    assertTrue(DemoSetup.plan(facts(true, true, null, false, false, List.of())).nothing());
  }

  @Test
  void rootOnAnAptHostInstallsWhatDpkgDoesNotHave() {
    var plan = DemoSetup.plan(facts(false, false, Set.of(), true, true, DEBIAN));
    assertEquals(List.of(DemoSetup.LUAJIT, DemoSetup.LIBBPF), plan.install());
    assertNull(plan.refusal());

    // libbpf alone is installed too: it is what bpf mode, record's default, loads.
    var libbpfOnly = DemoSetup.plan(facts(true, false, Set.of("luajit"), true, true, DEBIAN));
    assertEquals(List.of(DemoSetup.LIBBPF), libbpfOnly.install());
  }

  @Test
  void aPackageDpkgHasIsNeverInstalledAgainEvenWhenPathLacksIt() {
    var plan = DemoSetup.plan(facts(false, true, Set.of("luajit", "libbpf1"), true, true,
        DEBIAN));
    assertEquals(List.of(), plan.install());
    assertEquals("the demo runs a Lua program with luajit: the luajit package is installed but"
        + " no luajit is in PATH (" + PATH + "); add /usr/bin to PATH and run 'polystack demo'"
        + " again", plan.refusal());

    // A libbpf1 that dpkg has but no library directory shows is left to sampling's own line.
    var libbpf = DemoSetup.plan(facts(true, false, Set.of("luajit", "libbpf1"), true, true,
        DEBIAN));
    assertTrue(libbpf.nothing());
  }

  @Test
  void withoutRootItSaysExactlyWhatToInstall() {
    var plan = DemoSetup.plan(facts(false, false, Set.of(), false, true, DEBIAN));
    assertEquals(List.of(), plan.install());
    assertEquals("the demo runs a Lua program with luajit, which is not installed: install them"
        + " as root (sudo apt-get install luajit libbpf1) and run 'polystack demo' again, or run"
        + " 'sudo polystack demo' to have them installed", plan.refusal());

    var luajitOnly = DemoSetup.plan(facts(false, true, Set.of("libbpf1"), false, true, DEBIAN));
    assertEquals("the demo runs a Lua program with luajit, which is not installed: install it"
        + " as root (sudo apt-get install luajit) and run 'polystack demo' again, or run"
        + " 'sudo polystack demo' to have it installed", luajitOnly.refusal());
  }

  @Test
  void withoutRootAMissingLibbpfAloneDoesNotStopTheDemo() {
    assertTrue(DemoSetup.plan(facts(true, false, Set.of("luajit"), false, true, DEBIAN))
        .nothing());
  }

  @Test
  void awayFromAptItNamesThisSystemsCommandOrWhatToLookFor() {
    assertEquals("the demo runs a Lua program with luajit, which is not installed: install them"
        + " (dnf install luajit libbpf) and run 'polystack demo' again",
        DemoSetup.plan(facts(false, false, null, true, false, List.of("fedora"))).refusal());
    assertEquals("the demo runs a Lua program with luajit, which is not installed: install it"
        + " as root (sudo pacman -S luajit) and run 'polystack demo' again",
        DemoSetup.plan(facts(false, true, null, false, false, List.of("arch"))).refusal());
    assertEquals("the demo runs a Lua program with luajit, which is not installed: install"
        + " LuaJIT 2.1 (the luajit command) and libbpf 1.x (libbpf.so.1) with this system's"
        + " package manager and run 'polystack demo' again",
        DemoSetup.plan(facts(false, false, null, true, false, List.of("gentoo"))).refusal());
    // A Debian without apt-get (a minimal image): the command is still apt-get's, not run.
    assertEquals("the demo runs a Lua program with luajit, which is not installed: install it"
        + " (apt-get install luajit) and run 'polystack demo' again",
        DemoSetup.plan(facts(false, true, Set.of(), true, false, DEBIAN)).refusal());
  }

  @Test
  void dpkgStatusLinesCountOnlyInstalledPackages() {
    assertEquals(Set.of("luajit", "libbpf1"), DemoSetup.parseDpkgStatus("""
        luajit install ok installed
        libbpf1:amd64 install ok installed
        nginx deinstall ok config-files
        wrk install ok half-configured
        """));
  }

  @Test
  void osReleaseGivesIdAndIdLike(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("os-release");
    Files.writeString(file, """
        PRETTY_NAME="Ubuntu 24.04 LTS"
        ID=ubuntu
        ID_LIKE="debian"
        """);
    assertEquals(List.of("ubuntu", "debian"), DemoSetup.osIds(file));
    assertEquals(List.of(), DemoSetup.osIds(dir.resolve("missing")));
  }

  /** The probes on this machine, against what the system itself says. */
  @Test
  void probesThisMachine() throws Exception {
    assertTrue(DemoSetup.inPath("sh", PATH));
    assertTrue(!DemoSetup.inPath("sh", "/nonexistent"));
    String status = Files.readString(Path.of("/proc/self/status"));
    assertTrue(status.matches("(?s).*\\nUid:\\s+\\d+\\s+" + DemoSetup.effectiveUid() + "\\s.*"),
        "effective uid " + DemoSetup.effectiveUid());
    Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/dpkg-query")), "no dpkg here");
    // dpkg itself is installed wherever dpkg-query is; a made-up name is not.
    assertEquals(Set.of("dpkg"), DemoSetup.dpkgInstalled(List.of("dpkg",
        "polystack-no-such-package")));
  }
}
