package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A target that names its threads and its executable with terminal control sequences
 * (hostile_names.c: an SGR colour change, a newline and the C1 CSI "clear screen"; the binary
 * is run from a file whose name sets the terminal title with OSC ... BEL). What polystack
 * prints about it must reach the terminal with every control character escaped as {@code \xHH},
 * and a newline in a name must not start a line of its own.
 */
class TerminalEscapeTest {
  @TempDir Path dir;

  @Test
  void namesAndPathsFromTheTargetAreEscapedInEveryPrinter() throws Exception {
    Path binary = dir.resolve("hostile\u001b]0;pwned\u0007names");
    Files.copy(Workloads.binary("hostile_names"), binary, StandardCopyOption.COPY_ATTRIBUTES);
    try (Target target = Target.start(binary)) {
      target.awaitOutput("ready", 20_000);
      String pid = Integer.toString(target.pid());

      var dump = Distribution.run("dump", "--pid", pid);
      assertEquals(0, dump.exitCode(), dump.stderr());
      assertNoControlCharacters(dump.stdout() + dump.stderr());
      List<String> lines = dump.stdout().lines().toList();
      assertTrue(lines.contains("Thread " + pid + " \"\\x1b[31mred\\x1b[0m\" (sleeping)"),
          dump.stdout());
      assertTrue(lines.stream().anyMatch(l -> l.startsWith("Thread ")
          && l.contains(" \"x\\x0a\\x9b2Jy\" (")), dump.stdout());
      assertEquals(2, lines.stream().filter(l -> l.startsWith("Thread ")).count(),
          "two threads, no forged line: " + dump.stdout());
      assertTrue(dump.stdout().contains("(hostile\\x1b]0;pwned\\x07names)"),
          "the module of main, escaped: " + dump.stdout());

      var inspect = Distribution.run("inspect", "--pid", pid, "--all");
      assertNoControlCharacters(inspect.stdout() + inspect.stderr());
      assertTrue((inspect.stdout() + inspect.stderr()).contains("hostile\\x1b]0;pwned\\x07names"),
          inspect.stdout() + inspect.stderr());

      // JSON keeps the data (escaped as JSON, never raw) for machines.
      var json = Distribution.run("dump", "--pid", pid, "--json");
      assertEquals(0, json.exitCode(), json.stderr());
      assertNoControlCharacters(json.stdout());
      Path file = dir.resolve("dump.json");
      Files.writeString(file, json.stdout(), StandardCharsets.UTF_8);
      String names = Tools.python("""
          import json, sys
          d = json.load(sys.stdin)
          for name in sorted(t['name'] for t in d['threads']):
              print(' '.join('%x' % ord(c) for c in name))
          """, file);
      assertEquals(List.of("1b 5b 33 31 6d 72 65 64 1b 5b 30 6d", "78 a 9b 32 4a 79"),
          names.lines().toList(), names);

      RecordAttachTest.assertReleasedAndRunning(target);
      target.stdin().close();
      assertEquals(0, target.awaitExit(20), target.output());
    }
  }

  /** No C0 control character other than newline and tab, no DEL, no C1. */
  private static void assertNoControlCharacters(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      boolean control = c < 0x20 && c != '\n' && c != '\t' || c == 0x7f
          || c >= 0x80 && c <= 0x9f;
      assertTrue(!control, "raw control character 0x" + Integer.toHexString(c) + " at " + i
          + " in: " + text.substring(Math.max(0, i - 40), Math.min(text.length(), i + 40)));
    }
  }
}
