package dev.polystack.luajit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.kit.Conformance;
import dev.polystack.plugin.api.kit.PlanCoverage;
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
    if (file.getFileName().toString().startsWith("nginx-lua")) {
      // Lua called from C under Lua: the kit walks the deeper interpreter frame as segment 1.
      assertEquals(2, report.segments(), report.toString());
    }
  }

  /**
   * The kit's plan coverage check on every corpus case. Where the kit can run the plan to its
   * end, the walk's only reads the tick does not copy are closures' type tags (GCfunc, gct 8):
   * CapturePlans copies no closures, since no bounded plan can follow every frame's function,
   * and in bpf mode those reads go to the live process. Where the plan stops because the
   * snapshot never recorded a field it loads (L->stack: ptrace snapshots record the walk's
   * reads, not the plan's), the case cannot decide, and the kit says so.
   */
  @ParameterizedTest
  @MethodSource("cases")
  void corpusCasePlanCoverageHasOnlyTheKnownGaps(Path file) throws IOException {
    SnapshotCase c = SnapshotCase.read(file, List.of(CORPUS.resolve("modules")));
    PlanCoverage.Report report = Conformance.of(LuaJitPlugin::new).planCoverage(c);
    assertTrue(report.checkedSegments() >= 1 && report.copies() >= 2, report.toString());
    for (PlanCoverage.Gap g : report.gaps()) {
      boolean closureType = g.length() == 1 && g.recorded()[0] == Layout.GCT_FUNC;
      assertTrue(closureType || !g.decidable(), g.message());
      if (!g.decidable()) {
        assertTrue(g.message().contains("mapped but not in the snapshot"), g.message());
      }
    }
  }
}
