package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The quick start's first command, {@code polystack demo}, as a new user runs it: in an empty
 * folder, with the system luajit; its three outputs are checked by tools nobody here wrote.
 */
class DemoTest {

  @TempDir Path dir;

  @Test
  void writesAFlameGraphAPprofFileAndVdsoCallsAndSaysWhere() throws Exception {
    var result = Distribution.run(dir, Map.of(), "demo", "--duration", "2s");

    assertEquals(0, result.exitCode(), result.stderr());
    // Everything it needs is here (./run-tests installed it): it says nothing of installing.
    assertTrue(!result.stderr().contains("installing"), result.stderr());
    Path folder = dir.resolve("polystack-demo");
    Path html = folder.resolve("profile.html");
    Path pprof = folder.resolve("profile.pb.gz");
    Path calls = folder.resolve("vdso-calls.jsonl");
    List<String> lines = result.stdout().lines().filter(l -> !l.startsWith("demo.lua:")).toList();
    assertEquals(3, lines.size(), result.stdout());
    assertTrue(lines.get(0).startsWith("flame graph:  " + html), lines.get(0));
    assertTrue(lines.get(1).startsWith("pprof:        " + pprof), lines.get(1));
    assertTrue(lines.get(2).startsWith("vDSO calls:   " + calls), lines.get(2));

    // The bundled program's Lua functions are in the flame graph and in what pprof reads.
    String page = Files.readString(html, StandardCharsets.UTF_8);
    assertTrue(page.contains("fib") && page.contains("checksum"), "no Lua frames in " + html);
    var top = Tools.run(300, null, List.of(Tools.go(), "tool", "pprof", "-top", "-nodecount",
        "200", pprof.toString()));
    assertEquals(0, top.exitCode(), top.stderr());
    assertTrue(top.stdout().contains("fib"), top.stdout());
    assertTrue(top.stdout().contains("demo.lua"), top.stdout());

    // Issue 26: the headers' lost row lists losses only; bpf mode's capture figures (records,
    // ticks, plans: not samples lost) have a row of their own.
    Matcher lost = LOST_ROW.matcher(page);
    assertTrue(lost.find(), "no lost row in " + html);
    assertFalse(lost.group(1).contains("capture_"), lost.group(1));
    if (page.contains("<dt>mode</dt><dd>bpf</dd>")) {
      assertTrue(page.contains("<dt>tick capture</dt><dd>") && page.contains("records: "), page);
    }
    var raw = Tools.run(300, null, List.of(Tools.go(), "tool", "pprof", "-raw", pprof.toString()));
    assertEquals(0, raw.exitCode(), raw.stderr());
    assertFalse(raw.stdout().contains("lost: capture_"), raw.stdout());

    // Every line is JSON (Python's parser says so); the program's os.clock calls are there as
    // clock_gettime(CLOCK_PROCESS_CPUTIME_ID) with the timespec it got, and the summary counts
    // exactly the call lines written.
    String check = """
        import json, sys
        calls = 0; cpu = 0; summary = None
        for line in sys.stdin:
            o = json.loads(line)
            if o["type"] == "call":
                calls += 1
                if o["function"] == "clock_gettime" and o["args"]["clock"] == "CLOCK_PROCESS_CPUTIME_ID" \\
                        and o["result"] == 0 and o["outputs"] and "tv_nsec" in o["outputs"]["tp"]:
                    cpu += 1
            elif o["type"] == "session_summary":
                summary = o
        print(calls, cpu, summary["calls"], summary["emitted"])
        """;
    String[] counts = Tools.python(check, calls).strip().split(" ");
    long written = Long.parseLong(counts[0]);
    assertTrue(Long.parseLong(counts[1]) >= 100, "too few clock_gettime calls: " + counts[1]);
    assertEquals(written, Long.parseLong(counts[2]));
    assertEquals(written, Long.parseLong(counts[3]));
    assertTrue(lines.get(2).contains("(" + written + " calls)"), lines.get(2));

    // Issue 20: the program root runs lived in a fresh private directory, gone afterwards; the
    // results are private.
    Matcher script = SCRIPT.matcher(result.stderr());
    assertTrue(script.find(), result.stderr());
    Path scriptDir = Path.of(script.group(1));
    assertTrue(scriptDir.getFileName().toString().startsWith("polystack-demo-"),
        scriptDir.toString());
    assertFalse(Files.exists(scriptDir), scriptDir + " was left behind");
    assertEquals(List.of("profile.html", "profile.pb.gz", "vdso-calls.jsonl"),
        RootSafeOutputsTest.names(folder));
    assertEquals(0700, (Integer) Files.getAttribute(folder, "unix:mode") & 07777);
    for (Path p : List.of(html, pprof, calls)) {
      assertEquals(0600, (Integer) Files.getAttribute(p, "unix:mode") & 07777, p.toString());
    }
  }

  private static final Pattern LOST_ROW = Pattern.compile("<dt>lost</dt><dd>([^<]*)</dd>");
  private static final Pattern SCRIPT = Pattern.compile("running 'luajit (/\\S+)/demo\\.lua ");

  /**
   * A predictable folder planted by another user (here a link to a directory elsewhere) is
   * refused before anything runs: whoever controls it could swap what root writes there.
   */
  @Test
  void aPlantedOutputFolderIsRefused() throws Exception {
    Path elsewhere = Files.createDirectory(dir.resolve("elsewhere"));
    Files.createSymbolicLink(dir.resolve("polystack-demo"), elsewhere);

    var result = Distribution.run(dir, Map.of(), "demo", "-d", "1s");

    assertEquals(2, result.exitCode(), result.stderr());
    assertEquals(List.of("polystack: --output-dir polystack-demo: is a symbolic link; polystack"
        + " writes only into a real directory: give the directory it points to"),
        result.stderrLines());
    assertEquals(List.of(), RootSafeOutputsTest.names(elsewhere));
  }

  /**
   * Root on this Debian host, with a PATH that has no luajit: dpkg says the luajit package is
   * installed, so the demo installs nothing (no apt-get run) and says what is wrong instead.
   */
  @Test
  void aLuajitPackageOutsidePathIsNamedNotReinstalled() throws Exception {
    Assumptions.assumeTrue(dpkgHasLuajit(), "needs the luajit package (./run-tests installs it)");
    var result = Distribution.run(dir, Map.of("PATH", dir.toString()), "demo",
        "--output-dir", dir.resolve("out").toString());

    assertEquals(1, result.exitCode(), result.stderr());
    assertEquals(List.of("polystack: the demo runs a Lua program with luajit: the luajit package"
        + " is installed but no luajit is in PATH (" + dir + "); add /usr/bin to PATH and run"
        + " 'polystack demo' again"), result.stderrLines());
    assertTrue(Files.notExists(dir.resolve("out")), "nothing is written when it cannot run");
  }

  /**
   * Not root (the test drops to user nobody when it runs as root): polystack may install
   * nothing, and with luajit outside PATH it stops with one line before writing anything.
   */
  @Test
  void withoutRootItInstallsNothingAndSaysWhatToDo(@TempDir Path home) throws Exception {
    Assumptions.assumeTrue(dpkgHasLuajit(), "needs the luajit package (./run-tests installs it)");
    // The distribution (the jar and the lib/ its manifest names) where user nobody can read
    // it: the checkout may be private to root.
    Path readable = Files.createTempDirectory(Path.of("/tmp"), "polystack-demo-jar");
    try {
      Path jar = Files.copy(Distribution.jar(), readable.resolve("polystack-host.jar"));
      Path lib = Files.createDirectory(readable.resolve("lib"));
      try (var libs = Files.list(Distribution.jar().resolveSibling("lib"))) {
        for (Path l : libs.toList()) {
          Files.setPosixFilePermissions(Files.copy(l, lib.resolve(l.getFileName())),
              PosixFilePermissions.fromString("rw-r--r--"));
        }
      }
      for (Path d : List.of(readable, lib)) {
        Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
      }
      Files.setPosixFilePermissions(jar, PosixFilePermissions.fromString("rw-r--r--"));
      List<String> command = new ArrayList<>();
      if (Files.readString(Path.of("/proc/self/status")).matches("(?s).*\\nUid:\\s+0\\s.*")) {
        command.addAll(List.of("/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
            "--clear-groups"));
      }
      command.addAll(List.of("/usr/bin/env", "PATH=" + home,
          Path.of(System.getProperty("java.home"), "bin", "java").toString()));
      command.addAll(Distribution.launcherJvmOptions("demo"));
      command.addAll(List.of("-jar", jar.toString(), "demo", "--output-dir",
          home.resolve("out").toString()));
      var result = Tools.run(120, null, command);

      assertEquals(1, result.exitCode(), result.stderr());
      assertEquals(List.of("polystack: the demo runs a Lua program with luajit: the luajit"
          + " package is installed but no luajit is in PATH (" + home + "); add /usr/bin to"
          + " PATH and run 'polystack demo' again"),
          result.stderr().lines().filter(l -> !l.isBlank()).toList());
      assertTrue(Files.notExists(home.resolve("out")), "nothing is written when it cannot run");
    } finally {
      try (var files = Files.walk(readable)) {
        for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
          Files.delete(f);
        }
      }
    }
  }

  /** dpkg's own answer, the oracle for "installed": dpkg-query, not PATH. */
  private static boolean dpkgHasLuajit() throws Exception {
    if (!Files.isExecutable(Path.of("/usr/bin/dpkg-query"))) {
      return false;
    }
    var q = Tools.run(30, null, List.of("/usr/bin/dpkg-query", "-W", "-f", "${Status}",
        "luajit"));
    return q.exitCode() == 0 && q.stdout().strip().equals("install ok installed");
  }
}
