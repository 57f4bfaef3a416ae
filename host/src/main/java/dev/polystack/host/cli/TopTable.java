package dev.polystack.host.cli;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.plugin.api.Frame;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The functions of {@code polystack top}: each function's own time (samples where it is the
 * leaf) and total time (samples where it is anywhere on the stack, once however often it
 * recurses), summed over the run and over the latest interval, and laid out as py-spy's top
 * table. A function is its name with its file and first line (runtime frames) or its module
 * (native frames), so a function's lines and addresses add up to one row.
 *
 * <p>Not thread-safe: the top command feeds and renders it from one thread at a time.
 */
final class TopTable {

  /** Which time orders the rows. */
  enum Sort {
    OWN, TOTAL;

    static Sort parse(String text) {
      for (Sort s : values()) {
        if (s.name().toLowerCase(Locale.ROOT).equals(text)) {
          return s;
        }
      }
      throw new UsageException("--sort " + text + ": expected own or total");
    }
  }

  /** Which samples the percentages (and the order) are taken over. */
  enum Window {
    /** The latest interval: what runs now, as a live view shows it. */
    LATEST,
    /** The whole run, for the final table. */
    RUN
  }

  /**
   * One function's figures, in sampling periods.
   *
   * @param function the label shown (escaped for the terminal)
   */
  record Row(String function, long ownRun, long totalRun, long ownLatest, long totalLatest) {
    long own(Window w) {
      return w == Window.RUN ? ownRun : ownLatest;
    }

    long total(Window w) {
      return w == Window.RUN ? totalRun : totalLatest;
    }
  }

  /** Stands in for an empty stack, as in the other outputs. */
  static final String NO_FRAMES = "[no frames]";
  /** Where functions beyond {@link #maxFunctions} are counted, so no sample goes missing. */
  static final String OTHER = "[other functions]";

  private final int maxFunctions;
  /** own run, total run, own latest, total latest; by function label. */
  private final Map<String, long[]> functions = new HashMap<>();
  private long periodsRun;
  private long periodsLatest;
  private long samplesRun;

  /** @param maxFunctions distinct functions kept apart; more add up in {@link #OTHER} */
  TopTable(int maxFunctions) {
    if (maxFunctions < 1) {
      throw new IllegalArgumentException("maxFunctions must be positive: " + maxFunctions);
    }
    this.maxFunctions = maxFunctions;
  }

  /** Starts a new latest interval with the samples of {@code interval}. */
  void add(Recording interval) {
    for (long[] f : functions.values()) {
      f[2] = 0;
      f[3] = 0;
    }
    periodsLatest = 0;
    // Stacks are interned by the sampler: each distinct stack is labelled once per interval.
    Map<StackTrace, List<String>> labelled = new IdentityHashMap<>();
    for (Sample sample : interval.samples()) {
      List<String> names = labelled.computeIfAbsent(sample.stack(), s -> functions(s, interval));
      long periods = sample.periods();
      periodsRun += periods;
      periodsLatest += periods;
      samplesRun += sample.count();
      for (int i = 0; i < names.size(); i++) {
        long[] f = row(names.get(i));
        if (i == 0) {
          f[0] += periods;
          f[2] += periods;
        }
        f[1] += periods;
        f[3] += periods;
      }
    }
  }

  /** Sampling periods of the run so far, of all threads. */
  long periodsRun() {
    return periodsRun;
  }

  long periodsLatest() {
    return periodsLatest;
  }

  /** Samples of the run so far (merged ones by what they merged). */
  long samplesRun() {
    return samplesRun;
  }

  /** The rows with time in {@code window}, busiest first by {@code sort}. */
  List<Row> rows(Sort sort, Window window) {
    List<Row> rows = new ArrayList<>();
    functions.forEach((name, f) -> {
      Row r = new Row(name, f[0], f[1], f[2], f[3]);
      if (r.total(window) > 0) {
        rows.add(r);
      }
    });
    Comparator<Row> own = Comparator.comparingLong(r -> r.own(window));
    Comparator<Row> total = Comparator.comparingLong(r -> r.total(window));
    Comparator<Row> order = sort == Sort.OWN ? own.thenComparing(total) : total.thenComparing(own);
    rows.sort(order.reversed().thenComparing(Row::function));
    return rows;
  }

  /**
   * The table as text: a header line, then at most {@code maxRows} rows, each cut to
   * {@code width} characters (0: not cut).
   *
   * @param periodNanos the time one sampling period stands for
   */
  String render(Sort sort, Window window, long periodNanos, int maxRows, int width) {
    long all = window == Window.RUN ? periodsRun : periodsLatest;
    StringBuilder sb = new StringBuilder();
    line(sb, String.format(Locale.ROOT, "%8s %8s %9s %10s  %s", sort == Sort.OWN ? "%Own*" : "%Own",
        sort == Sort.TOTAL ? "%Total*" : "%Total", "OwnTime", "TotalTime", "Function"), width);
    List<Row> rows = rows(sort, window);
    if (rows.isEmpty()) {
      line(sb, window == Window.RUN ? "(no samples)" : "(no samples in this interval)", width);
    }
    for (int i = 0; i < rows.size() && i < maxRows; i++) {
      Row r = rows.get(i);
      line(sb, String.format(Locale.ROOT, "%7.2f%% %7.2f%% %8.2fs %9.2fs  %s",
          percent(r.own(window), all), percent(r.total(window), all),
          r.ownRun() * periodNanos / 1e9, r.totalRun() * periodNanos / 1e9, r.function()),
          width);
    }
    if (rows.size() > maxRows) {
      line(sb, "(" + (rows.size() - maxRows) + " more functions)", width);
    }
    return sb.toString();
  }

  private static double percent(long part, long all) {
    return all == 0 ? 0 : 100.0 * part / all;
  }

  private static void line(StringBuilder sb, String text, int width) {
    sb.append(width > 0 && text.length() > width ? text.substring(0, width) : text).append('\n');
  }

  private long[] row(String name) {
    long[] f = functions.get(name);
    if (f == null) {
      if (functions.size() >= maxFunctions) {
        return functions.computeIfAbsent(OTHER, k -> new long[4]);
      }
      f = new long[4];
      functions.put(name, f);
    }
    return f;
  }

  /** The distinct functions of {@code stack}, leaf first. */
  private static List<String> functions(StackTrace stack, Recording recording) {
    if (stack.frames().isEmpty()) {
      return List.of(NO_FRAMES);
    }
    Set<String> names = new LinkedHashSet<>();
    for (Frame frame : stack.frames()) {
      names.add(function(frame, recording));
    }
    return List.copyOf(names);
  }

  /**
   * A frame's function as a row names it: runtime frames {@code NAME (FILE:FIRSTLINE)}, native
   * ones {@code SYMBOL (MODULE)}, an unnamed native one {@code [unknown] (MODULE)}; escaped, as
   * every string from the target is before it reaches the terminal.
   */
  static String function(Frame frame, Recording recording) {
    if (frame.isError()) {
      return TerminalText.escape("[error: " + frame.function() + "]");
    }
    boolean nativeFrame = Frame.NATIVE.equals(frame.type()) || Frame.KERNEL.equals(frame.type());
    String name = !frame.function().isEmpty() ? frame.function()
        : nativeFrame ? "[unknown]" : "?";
    String where;
    if (!nativeFrame && !frame.file().isEmpty()) {
      where = frame.file() + (frame.startLine() > 0 ? ":" + frame.startLine() : "");
    } else if (!frame.module().isEmpty()) {
      where = baseName(frame.module());
    } else if (Frame.KERNEL.equals(frame.type())) {
      where = "kernel";
    } else {
      where = recording.moduleAt(frame.address()).map(m -> m.baseName()).orElse("");
    }
    return TerminalText.escape(where.isEmpty() ? name : name + " (" + where + ")");
  }

  private static String baseName(String path) {
    int slash = path.lastIndexOf('/');
    return slash < 0 ? path : path.substring(slash + 1);
  }
}
