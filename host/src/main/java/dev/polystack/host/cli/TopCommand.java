package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.session.IntervalListener;
import dev.polystack.host.session.RecordSession;
import dev.polystack.otel.model.Recording;
import java.time.Duration;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/**
 * {@code polystack top}: a live table of where a process spends its time, by function, as
 * py-spy top shows it. The samples come from the record session's interval stream (the one the
 * OTLP export uses), so the backends, their defaults and the losses are record's own.
 */
@Command(
    name = "top",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
        "Show a live table of the functions a running process (--pid) or a command (after --)"
            + " spends its time in, refreshed every --interval: %%Own and OwnTime count the"
            + " samples where the function itself runs, %%Total and TotalTime those where it is"
            + " on the stack (it or what it calls). Percentages are of the latest interval,"
            + " times since the start; the column sorted by is marked *.",
        "On a terminal the table fills the screen (q quits); piped or redirected, one plain"
            + " table is printed per interval. At the end (--duration, q, Ctrl-C, or the target's"
            + " exit) the"
            + " table of the whole run is printed and a summary on stderr; an attached process"
            + " runs on, untouched.",
        ""},
    footer = {"", "Examples:",
        "  polystack top --pid 1234",
        "  polystack top --sort total -d 30s -- luajit app.lua",
        "  polystack top --pid 1234 --once -d 10s > top.txt"})
final class TopCommand implements Runnable {

  @Mixin TargetOptions target = new TargetOptions();

  @Option(names = {"--interval", "-i"}, paramLabel = "D", converter = Durations.class,
      defaultValue = "1s",
      description = "How often the table is refreshed (default: ${DEFAULT-VALUE}).")
  Duration interval;

  @Option(names = "--sort", paramLabel = "own|total", defaultValue = "own",
      description = "Order rows by own time (the function itself) or total time (with what it"
          + " calls); default: ${DEFAULT-VALUE}.")
  String sort;

  @Option(names = "--rows", paramLabel = "N",
      description = "Functions per table (default: as many as the terminal shows; 25 when not"
          + " a terminal).")
  Integer rows;

  @Option(names = "--once",
      description = "Print no table while sampling, only the whole run's at the end (with"
          + " --duration, or until the target exits or Ctrl-C).")
  boolean once;

  @Option(names = {"--verbose", "-v"},
      description = "Also print the exact reasons of losses in the summary.")
  boolean verbose;

  @ParentCommand PolystackCommand parent;

  /** Rows of a table printed where no terminal says how many fit. */
  static final int PLAIN_ROWS = 25;
  /** Functions kept apart; beyond, their time adds up in one row (see {@link TopTable}). */
  static final int MAX_FUNCTIONS = 100_000;
  /** Lines above the table on the terminal: the two header lines. */
  private static final int HEADER_LINES = 2;

  private final PluginLoader loader;
  private final PluginGuard guard;
  private final Console console;

  @Inject
  TopCommand(PluginLoader loader, PluginGuard guard, Console console) {
    this.loader = loader;
    this.guard = guard;
    this.console = console;
  }

  @Override
  public void run() {
    TopTable.Sort order = TopTable.Sort.parse(sort);
    if (rows != null && rows < 1) {
      throw new UsageException("--rows " + rows + ": must be at least 1");
    }
    SamplingOptions options = target.options(SamplingOptions.DEFAULT_MAX_DEPTH);
    RecordSession.Backend backend = target.check();
    Credentials as = target.launchCredentials(console);
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    TopTable table = new TopTable(MAX_FUNCTIONS);
    RecordSession.Result result;
    try (TopScreen screen = new TopScreen(console, TopScreen.stdoutIsTerminal())) {
      Live live = new Live(table, screen, order);
      RecordSession session = new RecordSession(ProcFs.system(), registry, guard, console::warn)
          .launchAs(as).stream(interval, live, false);
      try (StopSignals signals = new StopSignals(console); TopKeys keys = TopKeys.start()) {
        result = target.sample(session, backend, options,
            () -> signals.stopRequested() || keys.quitRequested(),
            (samples, errors, lost, seconds) -> { });
      } catch (SamplingException e) {
        throw new CommandFailedException(e.getMessage());
      }
      screen.close(); // the user's screen back before the final table goes on it
      synchronized (live) {
        int n = rows != null ? rows : screen.rowsFor(HEADER_LINES, PLAIN_ROWS);
        console.screen("", (screen.terminal() || once ? "" : "\n")
            + live.header(TopTable.Window.RUN)
            + table.render(order, TopTable.Window.RUN, live.periodNanos, n, screen.width()));
      }
    }
    Summaries.print(console, result, null, verbose, target.idle);
  }

  /** Feeds the table from the interval stream and shows it (on the run's helper thread). */
  private final class Live implements IntervalListener {
    private final TopTable table;
    private final TopScreen screen;
    private final TopTable.Sort order;
    private String targetName = "";
    private int pid;
    private String mode = "";
    private long startEpochNanos = -1;
    private long endEpochNanos;
    private long periodNanos = 1;
    private Totals totals;

    Live(TopTable table, TopScreen screen, TopTable.Sort order) {
      this.table = table;
      this.screen = screen;
      this.order = order;
    }

    @Override
    public synchronized void interval(Recording recording, Totals t, boolean last) {
      if (startEpochNanos < 0) {
        startEpochNanos = recording.startEpochNanos();
        targetName = TerminalText.escape(recording.target().executableName());
        pid = recording.target().pid();
        mode = recording.mode();
        periodNanos = recording.periodNanos();
      }
      endEpochNanos = recording.endEpochNanos();
      totals = t;
      table.add(recording);
      if (!last && !once) {
        int n = rows != null ? rows : screen.rowsFor(HEADER_LINES, PLAIN_ROWS);
        screen.show(header(TopTable.Window.LATEST),
            table.render(order, TopTable.Window.LATEST, periodNanos, n, screen.width()));
      }
    }

    /** Two lines: the target and the run's figures; what the columns cover. */
    String header(TopTable.Window window) {
      long lost = totals == null ? 0 : LossGroups.total(totals.losses());
      long errors = totals == null ? 0
          : totals.errors().values().stream().mapToLong(v -> v).sum();
      double seconds = startEpochNanos < 0 ? 0 : (endEpochNanos - startEpochNanos) / 1e9;
      String first = String.format(Locale.ROOT, "polystack top: %s (pid %d), %s mode, %d Hz,"
          + " %.1f s; %s, %d with an error frame, %d lost", targetName, pid, mode,
          target.rate, seconds, Summaries.plural(table.samplesRun(), "sample"), errors, lost);
      String second = window == TopTable.Window.RUN
          ? "whole run: percentages and times since the start"
          : "percentages: the last " + (interval.toMillis() % 1000 == 0
              ? interval.toSeconds() + " s" : interval.toMillis() + " ms")
              + "; times: since the start";
      return first + "\n" + second + "\n";
    }
  }
}
