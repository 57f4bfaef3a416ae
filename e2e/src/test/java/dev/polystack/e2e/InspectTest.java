package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code polystack inspect} on real binaries and a real process, as a user runs it. */
class InspectTest {

  @TempDir Path dir;

  @Test
  void findsLuaJitInTheStrippedDebianExecutableByContent() throws Exception {
    var result = Distribution.run("inspect", "--binary", "/usr/bin/luajit", "--json");

    assertEquals(0, result.exitCode(), result.stderr());
    String line = result.stdout().strip();
    assertTrue(line.startsWith("{\"module\":\"/usr/bin/luajit\",\"build_id\":\""), line);
    assertTrue(line.contains("\"plugin\":\"luajit\",\"status\":\"supported\""), line);
    assertTrue(line.contains("\"LuaJIT\\\" in read-only data"), line);
    // The interpreter is the one ~16 KiB FDE (buildvm emits a single FDE for the whole VM).
    assertTrue(line.matches(".*\"label\":\"luajit interpreter\".*"), line);
  }

  @Test
  void theSameBytesUnderAnotherNameAreStillLuaJit() throws Exception {
    Path copy = dir.resolve("my-game-server");
    java.nio.file.Files.copy(Path.of("/usr/bin/luajit"), copy);

    var result = Distribution.run("inspect", "--binary", copy.toString());

    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stdout().contains("luajit: supported: LuaJIT 2.1"), result.stdout());
  }

  @Test
  void aNonLuaBinaryHasNoFindings() throws Exception {
    var result = Distribution.run("inspect", "--binary", "/bin/true");

    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stdout().contains("no plug-in recognised this module"), result.stdout());
  }

  @Test
  void aLiveLuaJitProcessShowsRuntimeAddressesAndItsVdso() throws Exception {
    Process lua = new ProcessBuilder("/usr/bin/luajit", "-e", "io.read()")
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    try {
      // Blocked in io.read(): the loader has mapped everything before we read the maps.
      Awaits.blockedIn(lua.pid(), java.util.Set.of(Awaits.READ), 20_000);
      var result = Distribution.run("inspect", "--pid", Long.toString(lua.pid()));

      assertEquals(0, result.exitCode(), result.stderr());
      String out = result.stdout();
      assertTrue(out.contains("/usr/bin/luajit"), out);
      assertTrue(out.contains("luajit: supported: LuaJIT 2.1"), out);
      assertTrue(out.contains("bias 0x5"), "PIE executables load near 0x55..: " + out);
      assertTrue(out.contains("[vdso]"), out);
      assertTrue(out.contains("entry probe on clock_gettime@LINUX_2.6"), out);
      assertTrue(out.contains("left out: "), out);
      assertTrue(lua.isAlive(), "inspect must not disturb the target");
    } finally {
      lua.getOutputStream().close();
      if (!lua.waitFor(5, TimeUnit.SECONDS)) {
        lua.destroyForcibly();
      }
    }
    assertEquals(0, lua.exitValue(), "the target exits normally after inspection");
  }

  /** Issue 29: --validate printed no verdict; it says what was confirmed, per runtime. */
  @Test
  void validateEndsWithAVerdictPerRuntime() throws Exception {
    // The interpreter only (-joff): every snapshot finds the VM in its dispatch loop.
    Process lua = new ProcessBuilder("/usr/bin/luajit", "-joff", "-e",
        "local a = 0 while true do a = (a + 1) % 7 end")
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    try {
      Awaits.cpuTicks(lua.pid(), 10, 20_000);
      var result = Distribution.run("inspect", "--pid", Long.toString(lua.pid()), "--validate");

      assertEquals(0, result.exitCode(), result.stderr());
      assertTrue(result.stdout().lines().anyMatch(l -> l.matches("validate: confirmed: \\S+"
          + " \\(luajit\\): GG_G2DISP, G(, .*)? agreed with process " + lua.pid())),
          result.stdout());
      assertTrue(lua.isAlive(), "inspect must not disturb the target");
    } finally {
      lua.destroy();
      lua.waitFor(5, TimeUnit.SECONDS);
    }

    Process sleep = new ProcessBuilder("/bin/sleep", "60").start();
    try {
      Awaits.blockedIn(sleep.pid(), java.util.Set.of(Awaits.NANOSLEEP, Awaits.CLOCK_NANOSLEEP),
          20_000);
      var none = Distribution.run("inspect", "--pid", Long.toString(sleep.pid()), "--validate");
      assertEquals(0, none.exitCode(), none.stderr());
      assertTrue(none.stdout().contains("validate: nothing to validate: no plug-in recognised a"
          + " runtime in process " + sleep.pid()), none.stdout());
    } finally {
      sleep.destroy();
      sleep.waitFor(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void aPluginThatThrowsIsReportedOnceAndTheOthersCarryOn() throws Exception {
    PluginJars.build(dir.resolve("thrower.jar"),
        Map.of("example.ThrowerPlugin", PluginJars.runtimePlugin("ThrowerPlugin", "thrower", "2.0",
            "throw new IllegalStateException(\"bad plug-in\");")),
        List.of("example.ThrowerPlugin"));

    // Two modules, so the plug-in throws twice; it is reported once.
    var result = Distribution.run("--plugin-path", dir.toString(), "inspect", "--binary",
        "/usr/bin/luajit");

    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stdout().contains("luajit: supported"), result.stdout());
    assertEquals(List.of(PluginJars.privilegeWarning(dir.resolve("thrower.jar")),
            "polystack: warning: plug-in 'thrower' threw in inspect:"
            + " IllegalStateException: bad plug-in (ignored and counted; further failures are not"
            + " shown)"),
        result.stderrLines());
  }

  @Test
  void badTargetsFailWithOneLine() throws Exception {
    var missing = Distribution.run("inspect", "--binary", dir.resolve("nope").toString());
    assertEquals(2, missing.exitCode());
    assertEquals(1, missing.stderrLines().size());

    Path text = java.nio.file.Files.writeString(dir.resolve("notes.txt"), "x".repeat(200));
    var notElf = Distribution.run("inspect", "--binary", text.toString());
    assertEquals(1, notElf.exitCode());
    assertTrue(notElf.stderr().contains("bad ELF magic"), notElf.stderr());
    assertEquals(1, notElf.stderrLines().size());

    var gone = Distribution.run("inspect", "--pid", "2147483646");
    assertEquals(1, gone.exitCode());
    assertTrue(gone.stderr().contains("does not exist (it may have exited)"), gone.stderr());
    assertFalse(gone.stderr().contains("Exception"), gone.stderr());

    var both = Distribution.run("inspect", "--pid", "1", "--binary", "/bin/true");
    assertEquals(2, both.exitCode());
    assertTrue(both.stderr().contains("mutually exclusive"), both.stderr());
  }
}
