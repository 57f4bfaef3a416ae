package dev.polystack.luajit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.kit.Conformance;
import dev.polystack.plugin.api.kit.SnapshotCase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The plug-in author kit run on this plug-in, as a third party would run it on theirs: the
 * descriptor checks, and every case of the snapshot corpus (recorded from real luajit and
 * OpenResty luajit2 processes; the module files come from the corpus's content-addressed store).
 */
class LuaJitConformanceTest {
  private static final Path CORPUS =
      Path.of(System.getProperty("basedir", "."), "..", "host", "src", "test", "resources",
          "snapshots").normalize();

  static Stream<Path> cases() throws IOException {
    try (Stream<Path> files = Files.list(CORPUS)) {
      List<Path> all = files.filter(p -> p.toString().endsWith(".psnap")).sorted().toList();
      assertTrue(all.size() >= 4, "corpus not found at " + CORPUS);
      return all.stream();
    }
  }

  @Test
  void descriptorIsSaneAndLoadable() {
    var d = Conformance.of(LuaJitPlugin::new).checkDescriptor();
    assertEquals("luajit", d.id());
  }

  @ParameterizedTest
  @MethodSource("cases")
  void corpusCaseConforms(Path file) throws IOException {
    SnapshotCase c = SnapshotCase.read(file, List.of(CORPUS.resolve("modules")));
    Conformance.CaseReport report = Conformance.of(LuaJitPlugin::new).checkCase(c);
    assertTrue(report.walks() >= 1 && report.runtimeFrames() >= 2, report.toString());
    assertTrue(report.faultsInjected() >= 2 * report.maxReads(), report.toString());
  }
}
