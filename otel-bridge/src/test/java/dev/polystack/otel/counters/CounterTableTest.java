package dev.polystack.otel.counters;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class CounterTableTest {
  /** Surefire runs in the module's directory; the repository's root is its parent. */
  private static final Path ROOT = Path.of("..");

  @Test
  void docsTablesAreTheGeneratedOnes() throws IOException {
    assertEquals(CounterTable.hostTable(), CounterTable.current(
        Files.readString(ROOT.resolve(CounterTable.HOST_DOC))), message(CounterTable.HOST_DOC));
    assertEquals(CounterTable.traceTable(), CounterTable.current(
        Files.readString(ROOT.resolve(CounterTable.TRACE_DOC))), message(CounterTable.TRACE_DOC));
  }

  private static String message(Path doc) {
    return doc + "'s counters table differs from the declarations (HostCounters, TraceCounters);"
        + " regenerate it from the repository's root with: " + CounterTable.COMMAND;
  }

  @Test
  void tablesHaveARowPerDeclaration() {
    String host = CounterTable.hostTable();
    for (Counter c : HostCounters.all()) {
      assertTrue(host.contains("| `" + c.name() + "` | " + c.kind().id() + " |"), c.name());
    }
    assertTrue(host.contains("| `plugin.<id>.<name>` | plugin_note |"));
    assertEquals(HostCounters.all().size() + 3, host.split("\n").length);
    String trace = CounterTable.traceTable();
    for (Counter c : TraceCounters.all()) {
      assertTrue(trace.contains("| `" + c.name() + "` | " + c.kind().id() + " |"), c.name());
    }
    assertEquals(TraceCounters.all().size() + 2, trace.split("\n").length);
  }

  @Test
  void replacingKeepsTheTextAroundTheMarkers() {
    String text = "before\n" + CounterTable.BEGIN + "\nold\n" + CounterTable.END + "\nafter\n";
    String replaced = CounterTable.replaceIn(text, CounterTable.traceTable());
    assertTrue(replaced.startsWith("before\n" + CounterTable.BEGIN + "\n| counter |"));
    assertTrue(replaced.endsWith(CounterTable.END + "\nafter\n"));
    assertEquals(CounterTable.traceTable(), CounterTable.current(replaced));
  }
}
