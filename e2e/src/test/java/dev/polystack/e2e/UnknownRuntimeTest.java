package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A runtime no loaded plug-in knows (Python here) is profiled as the C program it is, and
 * {@code record} says so once, so the interpreter's frames do not pass for the program's.
 */
class UnknownRuntimeTest {
  @TempDir Path dir;

  @Test
  void recordSaysOnceThatNoPluginKnowsPython() throws Exception {
    Path out = dir.resolve("py.folded");
    var result = Distribution.run("record", "--mode", "perf", "-o", out.toString(), "--",
        Tools.python3(), "-c", "n = 0\nfor i in range(3_000_000): n += i\n");

    assertEquals(0, result.exitCode(), result.stderr());
    List<String> lines = result.stderrLines().stream()
        .filter(l -> l.contains("no loaded plug-in knows")).toList();
    assertEquals(1, lines.size(), result.stderr());
    assertTrue(lines.get(0).matches("polystack: warning: (lib)?python3[.0-9]*(\\.so\\S*)? is a"
        + " Python runtime and no loaded plug-in knows Python: the profile shows its C"
        + " functions, not the program's .*"), lines.get(0));
  }

  @Test
  void aProgramOfNoRuntimeGetsNoSuchLine() throws Exception {
    Path out = dir.resolve("c.folded");
    var result = Distribution.run("record", "--mode", "perf", "-o", out.toString(), "--",
        Workloads.binary("two_threads").toString(), "0.5");

    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(!result.stderr().contains("no loaded plug-in knows"), result.stderr());
  }
}
