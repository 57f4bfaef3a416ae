package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The output names a Go, perf or py-spy user types: {@code cpu.prof} and {@code prof.pb} are
 * pprof ({@code go tool pprof} reads them), {@code -o -} is stdout, and a name whose ending says
 * no format is refused before the target is touched, listing the endings polystack knows.
 */
class OutputNamesTest {
  private static final Pattern FOLDED_LINE = Pattern.compile(".+ [1-9][0-9]*");

  @TempDir Path dir;

  @ParameterizedTest
  @ValueSource(strings = {"cpu.prof", "prof.pb"})
  void goToolPprofReadsWhatOtherToolsNamesWrite(String name) throws Exception {
    Path out = dir.resolve(name);
    var result = Distribution.run("record", "-o", out.toString(), "--",
        Workloads.binary("two_threads").toString(), "1");
    assertEquals(0, result.exitCode(), result.stderr());

    // The first 'go tool pprof' of a fresh Go installation builds the tool (~40 s).
    var pprof = Tools.run(300, null, List.of(Tools.go(), "tool", "pprof", "-top",
        out.toString()));
    assertEquals(0, pprof.exitCode(), pprof.stderr());
    assertTrue(pprof.stdout().contains("leaf_a"), pprof.stdout());
  }

  @Test
  void dashWritesTheProfileToStdoutAndNoFile() throws Exception {
    try (Target target = Target.start(Workloads.binary("two_threads"), "stdin")) {
      var result = Distribution.run(dir, java.util.Map.of(), "record", "-p",
          Integer.toString(target.pid()), "-d", "1s", "-f", "folded", "-o", "-");

      assertEquals(0, result.exitCode(), result.stderr());
      assertFalse(Files.exists(dir.resolve("-")), "created a file named '-'");
      List<String> lines = result.stdout().lines().toList();
      assertFalse(lines.isEmpty(), result.stderr());
      for (String line : lines) {
        assertTrue(FOLDED_LINE.matcher(line).matches(), "not a folded stack: " + line);
      }
      assertTrue(result.stdout().contains("leaf_a"), result.stdout());
      assertFalse(result.stderr().contains("wrote"), result.stderr());
      RecordAttachTest.assertReleasedAndRunning(target);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"prof.xyz", "out.txt.gz", "profile"})
  void anUnknownEndingIsRefusedBeforeAnythingRuns(String name) throws Exception {
    Path out = dir.resolve(name);
    Path marker = dir.resolve("command-ran");
    var result = Distribution.run("record", "-o", out.toString(), "--", "/usr/bin/touch",
        marker.toString());

    assertEquals(2, result.exitCode(), result.stderr());
    assertEquals(1, result.stderrLines().size(), result.stderr());
    String line = result.stderrLines().get(0);
    assertTrue(line.startsWith("polystack: --output " + out + ": the name's ending says no"
        + " format polystack writes; end it with one of html (.html, .htm), pprof (.pb.gz,"
        + " .pprof, .prof, .pb),"), line);
    assertTrue(line.endsWith(", or give --format"), line);
    assertFalse(Files.exists(out));
    assertFalse(Files.exists(marker), "ran the command although the output name is refused");
  }
}
