package dev.polystack.otel.counters;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class CounterTableTest {
  /** Surefire runs in the module's directory; the docs are beside it. */
  private static final Path OPERATIONS = Path.of("..", "docs", "operations.md");

  @Test
  void docsTableIsTheGeneratedOne() throws IOException {
    String text = Files.readString(OPERATIONS);
    assertEquals(CounterTable.markdown(), CounterTable.current(text),
        "docs/operations.md's counters table differs from the declarations in HostCounters;"
            + " regenerate it from the repository's root with: " + CounterTable.COMMAND);
  }

  @Test
  void tableHasARowPerDeclarationAndOneForPlugins() {
    String table = CounterTable.markdown();
    for (Counter c : HostCounters.all()) {
      assertTrue(table.contains("| `" + c.name() + "` | " + c.kind().id() + " |"), c.name());
    }
    assertTrue(table.contains("| `plugin.<id>.<name>` | plugin_note |"));
    assertEquals(HostCounters.all().size() + 3, table.split("\n").length);
  }

  @Test
  void replacingKeepsTheTextAroundTheMarkers() {
    String text = "before\n" + CounterTable.BEGIN + "\nold\n" + CounterTable.END + "\nafter\n";
    String replaced = CounterTable.replaceIn(text);
    assertTrue(replaced.startsWith("before\n" + CounterTable.BEGIN + "\n| counter |"));
    assertTrue(replaced.endsWith(CounterTable.END + "\nafter\n"));
    assertEquals(CounterTable.markdown(), CounterTable.current(replaced));
  }
}
