package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The CLI contract: exit codes and one clear line per failure, never a stack trace. */
class CommandLineTest {

  @TempDir Path dir;

  @ParameterizedTest(name = "[{index}] {0}")
  @CsvSource(delimiter = '|', value = {
    "--bogus|Unknown option: '--bogus'",
    "plugins --bogus|Unknown option: '--bogus'",
    "frobnicate|unknown command 'frobnicate'; the commands are record, top, agent, dump,",
    // Short options users bring from py-spy, perf and async-profiler reach the same checks.
    "record -r 99 -f folded -d 1s -p 0|--pid 0: a process id is a positive number",
    "vdso -d 1s -p 0|--pid 0: a process id is a positive number",
    "dump -p 0|--pid 0: a process id is a positive number",
    "top -r 99 -d 1s -p 0|--pid 0: a process id is a positive number",
    "top|give either --pid PID or a command after --",
    "top --sort name -p 1|--sort name: expected own or total",
    "top --rows 0 -p 1|--rows 0: must be at least 1",
    "top --idle --mode bpf -p 1|--idle cannot be used with --mode bpf",
    "demo -d 1500ms|--duration 1500ms: give whole seconds",
    "demo --seconds 0|--duration 0ms: give whole seconds",
    "''|missing command",
    "--plugin-path /nonexistent/polystack-plugins plugins|--plugin-path /nonexistent/polystack-plugins: no such directory",
  })
  void badUsageExitsTwoWithOneLine(String args, String expected) throws Exception {
    String[] argv = args.isEmpty() ? new String[0] : args.split(" ");
    var result = Distribution.run(argv);

    assertEquals(2, result.exitCode(), result.stderr());
    assertEquals(1, result.stderrLines().size(), result.stderr());
    String line = result.stderrLines().get(0);
    assertTrue(line.startsWith("polystack: "), line);
    assertTrue(line.contains(expected), line);
    assertFalse(result.stderr().contains("Exception"), result.stderr());
    assertEquals("", result.stdout());
  }

  @Test
  void pluginPathThatIsAFileIsBadUsage() throws Exception {
    Path file = Files.writeString(dir.resolve("plugin.jar"), "not a directory");
    var result = Distribution.run("plugins", "--plugin-path", file.toString());

    assertEquals(2, result.exitCode());
    assertEquals(
        "polystack: --plugin-path " + file + ": not a directory; pass the directory that holds"
            + " the jar, not the jar itself",
        result.stderrLines().get(0));
    assertEquals(1, result.stderrLines().size());
  }

  @Test
  void helpAndVersionSucceed() throws Exception {
    var help = Distribution.run("--help");
    assertEquals(0, help.exitCode());
    assertTrue(help.stdout().contains("plugins"), help.stdout());
    assertTrue(help.stdout().contains("--plugin-path"), help.stdout());

    var top = Distribution.run("top", "--help");
    assertEquals(0, top.exitCode(), top.stderr());
    assertEquals("", top.stderr()); // picocli warns there when a description does not format
    assertTrue(top.stdout().contains("%Own and OwnTime"), top.stdout());
    assertTrue(top.stdout().contains("--sort=own|total"), top.stdout());

    var version = Distribution.run("--version");
    assertEquals(0, version.exitCode());
    assertTrue(version.stdout().matches("(?s)polystack \\S+, plug-in API 2\\.\\d+\\s*"),
        version.stdout());
  }
}
