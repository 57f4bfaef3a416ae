package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scripts of the repository that run as root never work in a fixed path under /tmp: another
 * user who creates that name first owns what root then writes, builds and runs there
 * (docs/reliability.md, "Root safety: other users' processes"). Run as root (CI).
 */
class RootScriptsTest {
  private static final Path CORPUS = Path.of("/tmp/polystack-corpus");

  @TempDir Path dir;

  /**
   * record-corpus.sh with a directory of that name made first by nobody: the script builds in a
   * fresh directory of its own (the gcc on PATH here reports where, and stops the script), and
   * leaves the planted one alone.
   */
  @Test
  void recordCorpusBuildsInAFreshRootDirectoryNotOneAnotherUserMadeFirst() throws Exception {
    boolean planted = !Files.exists(CORPUS);
    if (planted) {
      run(List.of("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "mkdir",
          "-m", "0777", CORPUS.toString()), List.of());
      run(List.of("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "touch",
          CORPUS.resolve("planted").toString()), List.of());
    }
    try {
      Path shim = Files.createDirectory(dir.resolve("bin"));
      Path gcc = shim.resolve("gcc");
      // Reports the owner, mode and name of the directory it was asked to write into.
      Files.writeString(gcc, "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2;"
          + " shift; done\nd=$(dirname \"$out\")\nstat -c '%u %a %n' \"$d\" >> \"$REPORT\"\n"
          + "exit 1\n");
      Files.setPosixFilePermissions(gcc, PosixFilePermissions.fromString("rwxr-xr-x"));
      Path report = dir.resolve("report");
      Path script = Distribution.root().resolve("host/src/test/resources/snapshots"
          + "/record-corpus.sh");
      List<String> env = List.of("PATH=" + shim + ":" + System.getenv("PATH"),
          "REPORT=" + report);
      run(List.of("bash", script.toString()), env);
      run(List.of("bash", script.toString()), env);

      List<String> seen = Files.readAllLines(report);
      assertEquals(2, seen.size(), seen.toString());
      for (String line : seen) {
        String[] f = line.split(" ", 3);
        assertEquals("0", f[0], "root's own directory: " + line);
        assertTrue(f[1].endsWith("55") || f[1].endsWith("00"), "no one else writes: " + line);
        assertNotEquals(CORPUS.toString(), f[2], "not the predictable name: " + line);
        assertTrue(!Files.exists(Path.of(f[2])), "removed when the script ended: " + line);
      }
      assertNotEquals(seen.get(0).split(" ", 3)[2], seen.get(1).split(" ", 3)[2],
          "a fresh directory for every run");
      if (planted) {
        assertTrue(Files.exists(CORPUS.resolve("planted")), "the planted directory is not root's"
            + " to empty or reuse");
      }
    } finally {
      if (planted) {
        run(List.of("rm", "-rf", CORPUS.toString()), List.of());
      }
    }
  }

  /** Every shell script in the repository: no fixed name under /tmp, only mktemp templates. */
  @Test
  void noScriptUsesAFixedPathUnderTmp() throws IOException {
    Pattern fixed = Pattern.compile("/tmp/[A-Za-z0-9._-]+");
    List<String> found = new ArrayList<>();
    for (Path script : scripts()) {
      List<String> lines = Files.readAllLines(script);
      for (int i = 0; i < lines.size(); i++) {
        String code = lines.get(i).replaceFirst("^\\s*#.*", "");
        Matcher m = fixed.matcher(code);
        while (m.find()) {
          if (!m.group().endsWith("XXXXXX")) {
            found.add(Distribution.root().relativize(script) + ":" + (i + 1) + ": " + m.group());
          }
        }
      }
    }
    assertEquals(List.of(), found);
  }

  private static List<Path> scripts() throws IOException {
    Path root = Distribution.root().toRealPath();
    List<Path> out = new ArrayList<>(List.of(root.resolve("polystack"), root.resolve("run-tests")));
    try (Stream<Path> all = Files.walk(root)) {
      all.filter(p -> p.toString().endsWith(".sh"))
          .filter(p -> !root.relativize(p).toString().contains("target/"))
          .filter(p -> !root.relativize(p).startsWith(".git"))
          .forEach(out::add);
    }
    assertTrue(out.size() > 5, out.toString());
    return out;
  }

  private static void run(List<String> command, List<String> env) throws Exception {
    ProcessBuilder b = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD);
    for (String kv : env) {
      int eq = kv.indexOf('=');
      b.environment().put(kv.substring(0, eq), kv.substring(eq + 1));
    }
    Process p = b.start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(command + " did not finish in 60 s");
    }
  }
}
