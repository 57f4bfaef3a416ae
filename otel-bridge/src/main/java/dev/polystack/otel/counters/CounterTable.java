package dev.polystack.otel.counters;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The counters tables of the docs, written from the declarations: a record's counters
 * ({@link HostCounters}) in docs/operations.md, a vDSO trace's ({@link TraceCounters}) in
 * docs/vdso.md. Run with the repository's root as argument, it replaces each table between
 * {@link #BEGIN} and {@link #END} in its file; without, it prints both.
 */
public final class CounterTable {
  private CounterTable() {}

  public static final String BEGIN = "<!-- counters: generated from the declarations by "
      + "CounterTable; edit the declarations, not this table -->";
  public static final String END = "<!-- end of counters -->";
  /** The doc that holds a record's counters, from the repository's root. */
  public static final Path HOST_DOC = Path.of("docs", "operations.md");
  /** The doc that holds a vDSO trace's counters, from the repository's root. */
  public static final Path TRACE_DOC = Path.of("docs", "vdso.md");
  /** How to regenerate the tables, from the repository's root. */
  public static final String COMMAND = "mvn -B -q -o -pl otel-bridge -am install -DskipTests"
      + " && java -cp otel-bridge/target/classes dev.polystack.otel.counters.CounterTable .";

  private static final List<CounterKind> ORDER = List.of(CounterKind.LOSS,
      CounterKind.CAPTURE_FIGURE, CounterKind.NOTE, CounterKind.ERROR_FRAME);

  /** A record's counters: one row per declaration and one for plug-in notes. */
  public static String hostTable() {
    StringBuilder sb = rows(HostCounters.registry());
    row(sb, "`plugin.<id>.<name>`", CounterKind.PLUGIN_NOTE.id(), "", "event",
        "A plug-in's own count of how it read the target (`plugin.luajit.g_from_cache`); the"
            + " host adds `plugin.<id>.unsupported` (the plug-in recognised its runtime in a"
            + " version it does not support) and `plugin.<id>.attach_failed`.");
    return sb.toString();
  }

  /** A vDSO trace's counters: one row per declaration. */
  public static String traceTable() {
    return rows(TraceCounters.registry()).toString();
  }

  /** {@code text} with the table between the markers replaced by {@code table}. */
  public static String replaceIn(String text, String table) {
    int begin = text.indexOf(BEGIN);
    int end = text.indexOf(END);
    if (begin < 0 || end < begin) {
      throw new IllegalArgumentException("no counters table: the markers " + BEGIN + " and "
          + END + " are missing or out of order");
    }
    return text.substring(0, begin + BEGIN.length()) + "\n" + table + text.substring(end);
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
      System.out.print(hostTable() + "\n" + traceTable());
      return;
    }
    Path root = Path.of(args[0]);
    rewrite(root.resolve(HOST_DOC), hostTable());
    rewrite(root.resolve(TRACE_DOC), traceTable());
  }

  private static void rewrite(Path file, String table) throws IOException {
    String text = Files.readString(file, StandardCharsets.UTF_8);
    Files.writeString(file, replaceIn(text, table), StandardCharsets.UTF_8);
  }

  private static StringBuilder rows(CounterRegistry registry) {
    StringBuilder sb = new StringBuilder();
    sb.append("| counter | kind | group | unit | what it counts |\n");
    sb.append("|---|---|---|---|---|\n");
    List<Counter> rows = new ArrayList<>(registry.all());
    // Stable: within a kind and group, the order of declaration.
    rows.sort(Comparator.comparingInt((Counter c) -> ORDER.indexOf(c.kind()))
        .thenComparing(Counter::group));
    for (Counter c : rows) {
      row(sb, "`" + c.name() + "`", c.kind().id(), c.group().words(), c.unit(), c.description());
    }
    return sb;
  }

  private static void row(StringBuilder sb, String... cells) {
    sb.append('|');
    for (String cell : cells) {
      sb.append(' ').append(cell.replace("|", "\\|")).append(" |");
    }
    sb.append('\n');
  }
}
