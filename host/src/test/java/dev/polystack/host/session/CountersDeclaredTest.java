package dev.polystack.host.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.modules.DebugFiles;
import dev.polystack.host.snapshot.SnapshotModules;
import dev.polystack.host.unwind.UnwindError;
import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.counters.HostCounters;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every counter name the sampling pipeline can emit is declared in HostCounters: the typed
 * constants cover the call sites, and this test covers what is still built from a reason
 * (module and debug file refusals, error frames) or written as a literal.
 */
class CountersDeclaredTest {
  private static final Path SOURCES = Path.of("src", "main", "java", "dev", "polystack", "host");
  /** Where sample losses and notes are counted (the probe backends count vDSO call records). */
  private static final List<String> PIPELINE = List.of("sampling", "session", "process",
      "modules", "cli", "bpf", "snapshot", "unwind");
  private static final Pattern LITERAL_COUNT = Pattern.compile(
      "\\b(?:lost|count|merge)\\(\\s*\"([a-z_]+)\"");
  private static final Pattern CAPTURE_LITERAL = Pattern.compile("\"(capture_[a-z_]+)\"");
  private static final Pattern MODULE_REASON =
      Pattern.compile("new ModuleOpenException\\(\\s*\"([a-z_]+)\"");

  @Test
  void everyErrorFrameOfTheUnwinderIsDeclared() {
    for (UnwindError e : UnwindError.values()) {
      assertEquals(CounterKind.ERROR_FRAME, Counters.declared(e.reason())
          .orElseThrow(() -> new AssertionError(e.reason() + " is not declared")).kind());
    }
  }

  @Test
  void everyModuleAndDebugFileRefusalIsDeclared() throws IOException {
    List<String> reasons = new ArrayList<>(matches(MODULE_REASON));
    reasons.add(SnapshotModules.NOT_RECORDED);
    assertTrue(reasons.size() >= 5, reasons.toString()); // the scan finds the real sites
    for (String reason : reasons) {
      assertDeclared(HostCounters.moduleNotOpened(reason).name(), CounterKind.NOTE);
    }
    for (String reason : List.of(DebugFiles.SYMLINK, DebugFiles.NOT_REGULAR,
        DebugFiles.MISMATCH, DebugFiles.UNREADABLE)) {
      assertDeclared(HostCounters.debugFileRefused(reason).name(), CounterKind.NOTE);
    }
  }

  @Test
  void everyLiteralCounterNameInThePipelineIsDeclared() throws IOException {
    TreeSet<String> names = new TreeSet<>(matches(LITERAL_COUNT));
    names.addAll(matches(CAPTURE_LITERAL));
    for (String name : names) {
      assertTrue(Counters.declared(name).isPresent(), name + " is emitted but not declared in"
          + " HostCounters (declare it and call the site with the constant)");
    }
  }

  private static void assertDeclared(String name, CounterKind kind) {
    assertEquals(kind, Counters.declared(name)
        .orElseThrow(() -> new AssertionError(name + " is not declared")).kind(), name);
  }

  private static List<String> matches(Pattern pattern) throws IOException {
    List<String> out = new ArrayList<>();
    for (String dir : PIPELINE) {
      try (Stream<Path> files = Files.walk(SOURCES.resolve(dir))) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          Matcher m = pattern.matcher(Files.readString(f));
          while (m.find()) {
            out.add(m.group(1));
          }
        }
      }
    }
    return out;
  }
}
