package dev.polystack.otel.counters;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The counters table of docs/operations.md, written from the declarations. With a file
 * argument it replaces the table between {@link #BEGIN} and {@link #END} in that file; without,
 * it prints the table.
 */
public final class CounterTable {
  private CounterTable() {}

  public static final String BEGIN = "<!-- counters: generated from HostCounters by "
      + "CounterTable; edit the declarations, not this table -->";
  public static final String END = "<!-- end of counters -->";
  /** How to regenerate the table, from the repository's root. */
  public static final String COMMAND = "mvn -B -q -o -pl otel-bridge -am install -DskipTests"
      + " && java -cp otel-bridge/target/classes dev.polystack.otel.counters.CounterTable"
      + " docs/operations.md";

  private static final List<CounterKind> ORDER = List.of(CounterKind.LOSS,
      CounterKind.CAPTURE_FIGURE, CounterKind.NOTE, CounterKind.ERROR_FRAME);

  /** The markdown table, one row per declared counter and one for plug-in notes. */
  public static String markdown() {
    StringBuilder sb = new StringBuilder();
    sb.append("| counter | kind | group in the summary | unit | what it counts |\n");
    sb.append("|---|---|---|---|---|\n");
    List<Counter> rows = new ArrayList<>(HostCounters.all());
    // Stable: within a kind and group, the order of declaration.
    rows.sort(Comparator.comparingInt((Counter c) -> ORDER.indexOf(c.kind()))
        .thenComparing(Counter::group));
    for (Counter c : rows) {
      row(sb, "`" + c.name() + "`", c.kind().id(), c.group().words(), c.unit(), c.description());
    }
    row(sb, "`plugin.<id>.<name>`", CounterKind.PLUGIN_NOTE.id(), "", "event",
        "A plug-in's own count of how it read the target (`plugin.luajit.g_from_cache`); the"
            + " host adds `plugin.<id>.unsupported` (the plug-in recognised its runtime in a"
            + " version it does not support) and `plugin.<id>.attach_failed`.");
    return sb.toString();
  }

  /** {@code text} with the table between the markers replaced by {@link #markdown()}. */
  public static String replaceIn(String text) {
    int begin = text.indexOf(BEGIN);
    int end = text.indexOf(END);
    if (begin < 0 || end < begin) {
      throw new IllegalArgumentException("no counters table: the markers " + BEGIN + " and "
          + END + " are missing or out of order");
    }
    return text.substring(0, begin + BEGIN.length()) + "\n" + markdown() + text.substring(end);
  }

  /** The table as it stands between the markers of {@code text}. */
  public static String current(String text) {
    int begin = text.indexOf(BEGIN);
    int end = text.indexOf(END);
    if (begin < 0 || end < begin) {
      return "";
    }
    return text.substring(begin + BEGIN.length(), end).strip() + "\n";
  }

  public static void main(String[] args) throws IOException {
    if (args.length == 0) {
      System.out.print(markdown());
      return;
    }
    Path file = Path.of(args[0]);
    String text = Files.readString(file, StandardCharsets.UTF_8);
    Files.writeString(file, replaceIn(text), StandardCharsets.UTF_8);
  }

  private static void row(StringBuilder sb, String... cells) {
    sb.append('|');
    for (String cell : cells) {
      sb.append(' ').append(cell.replace("|", "\\|")).append(" |");
    }
    sb.append('\n');
  }
}
