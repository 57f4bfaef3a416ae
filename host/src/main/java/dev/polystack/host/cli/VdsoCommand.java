package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.output.OutputException;
import dev.polystack.host.output.OutputFile;
import dev.polystack.host.output.Outputs;
import dev.polystack.host.launch.Accounts;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.VdsoTrace;
import dev.polystack.host.probes.BpfProbeBackend;
import dev.polystack.host.probes.BreakpointCheck;
import dev.polystack.host.probes.ProbeBackend;
import dev.polystack.host.probes.ProbeException;
import dev.polystack.host.probes.TraceSession;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.otel.counters.TraceCounters;
import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.plugin.api.ProbePlugin;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/** {@code polystack vdso}: trace the calls a process makes into its vDSO. */
@Command(
    name = "vdso",
    mixinStandardHelpOptions = true,
    description = "Trace calls into the vDSO (clock_gettime, gettimeofday, time, getcpu,"
        + " clock_getres, getrandom) of a running process (--pid) or a command (after --),"
        + " with hardware breakpoints at entry and return.")
final class VdsoCommand implements Runnable {

  @Option(names = {"--pid", "-p"}, paramLabel = "PID",
      description = "Attach to this running process.")
  Integer pid;

  @Parameters(paramLabel = "COMMAND", arity = "0..*",
      description = "Launch this command under the tracer (write it after --).")
  List<String> command = new ArrayList<>();

  @Option(names = "--functions", paramLabel = "NAME[@VERSION]", split = ",",
      description = "Functions to trace (default: every export with a decoder, as many as fit"
          + " into the 4 hardware breakpoints of a thread).")
  List<String> functions = new ArrayList<>();

  @Option(names = "--backend", paramLabel = "BACKEND",
      description = "bpf (breakpoints with a BPF handler that pairs each call in the kernel: the"
          + " target never stops; exact), ptrace (each call stops the thread: exact; if"
          + " polystack is killed by SIGKILL meanwhile, the target dies of SIGTRAP, see"
          + " docs/operations.md) or perf (breakpoint samples; never stops; loses calls, counted)."
          + " Default: bpf, unless it cannot run or this machine's hardware breakpoints have"
          + " raised stray SIGTRAPs since boot (a self-test at the first session; docs/vdso.md):"
          + " then ptrace, with one line saying why.")
  String backend;

  @Option(names = "--json", description = "JSON lines instead of text.")
  boolean json;

  @Option(names = {"--output", "-o"}, paramLabel = "FILE", description = "Write here, not to"
      + " standard output (mode 0600, under sudo owned by the invoking user; an existing file is"
      + " replaced, a symbolic link refused).")
  Path output;

  @Option(names = "--append", description = "Append to --output instead of replacing it (only"
      + " to a regular file of yours with no other hard link).")
  boolean append;

  @Option(names = "--tid", paramLabel = "TID", split = ",",
      description = "Only emit calls of these threads, comma-separated or repeated (statistics"
          + " still count all).")
  List<Integer> tids = new ArrayList<>();

  @Option(names = "--errors-only", description = "Only emit failed calls.")
  boolean errorsOnly;

  @Option(names = "--min-duration", paramLabel = "D", converter = ShortDurations.class,
      description = "Only emit calls that took at least this long (e.g. 50us, 1ms).")
  Duration minDuration;

  @Option(names = "--max-calls", paramLabel = "N",
      description = "End the session after N completed calls.")
  long maxCalls;

  @Option(names = "--summary-only", description = "With --output: write only the statistics.")
  boolean summaryOnly;

  @Option(names = "--calls", description = "Also print every call (the default prints the"
      + " statistics only, as strace -c; --output FILE writes every call to the file).")
  boolean calls;

  @Option(names = "--follow-forks", description = "Also trace fork and vfork children (bpf and"
      + " ptrace backends; the perf backend follows threads only).")
  boolean followForks;

  @Option(names = {"--duration", "-d"}, paramLabel = "D", converter = Durations.class,
      description = "End the session after this long (also when the target makes no calls).")
  Duration duration;

  @Mixin OtlpOptions otlp = new OtlpOptions();

  @Mixin LaunchOptions launchAs = new LaunchOptions();

  @ParentCommand PolystackCommand parent;

  private final PluginLoader loader;
  private final Console console;
  private final Outputs outputs;

  @Inject
  VdsoCommand(PluginLoader loader, Console console, Outputs outputs) {
    this.loader = loader;
    this.console = console;
    this.outputs = outputs;
  }

  @Override
  public void run() {
    if ((pid == null) == command.isEmpty()) {
      throw new UsageException("give either --pid PID or a command after --, not both or neither");
    }
    if (pid != null && pid <= 0) {
      throw new UsageException("--pid " + pid + ": a process id is a positive number");
    }
    if (pid != null) {
      KernelThreads.refuse(java.nio.file.Path.of("/proc"), pid, "--pid");
    }
    launchAs.checkLaunching(!command.isEmpty());
    boolean chosen = backend != null;
    if (chosen && !backend.equals("bpf") && !backend.equals("perf")
        && !backend.equals("ptrace")) {
      throw new UsageException("--backend " + backend + ": expected bpf, ptrace or perf");
    }
    if (followForks && "perf".equals(backend)) {
      // Following a child without stopping it needs inherited breakpoints (attr.inherit); the
      // kernel refuses a ring buffer on an inherited per-thread event (perf_mmap: EINVAL), and
      // the /proc rescan finds a child only after its first calls.
      throw new UsageException("--follow-forks needs --backend bpf or ptrace: the perf backend cannot"
          + " arm a child before it runs (the kernel gives inherited per-thread breakpoints no"
          + " ring buffer)");
    }
    if (maxCalls < 0) {
      throw new UsageException("--max-calls " + maxCalls + ": must be positive");
    }
    OtlpConfig otlpConfig = otlp.config(System.getenv());
    if (calls && summaryOnly) {
      throw new UsageException("--calls and --summary-only contradict each other: give one");
    }
    if (append && output == null) {
      throw new UsageException("--append needs --output FILE");
    }
    // Opened before anything is loaded or attached: an unwritable place fails first.
    OutputFile file;
    try {
      file = output == null ? null : outputs.writeNow(output, "--output", append);
    } catch (OutputException e) {
      throw OutputErrors.toCli(e);
    }
    Credentials as = command.isEmpty() ? null
        : launchAs.resolve(System.getenv(), Accounts.effectiveUid(), console::note);
    try {
      trace(otlpConfig, chosen, file, as);
    } finally {
      if (file != null) {
        // Keeps what was written (a partial trace still tells something); removes an empty
        // file this run created.
        file.close();
      }
    }
  }

  private void trace(OtlpConfig otlpConfig, boolean chosen, OutputFile file, Credentials as) {
    OtlpOptions.warnIfInClear(otlpConfig, console::warn);
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    ProbePlugin plugin = registry.probePlugins().stream()
        .filter(p -> p.id().equals("vdso"))
        .map(p -> (ProbePlugin) p.plugin())
        .findFirst()
        .orElseThrow(() -> new CommandFailedException("the vdso plug-in is not loaded; check"
            + " 'polystack plugins' and --plugin-path"));
    BreakpointCheck check = BreakpointCheck.system();
    VdsoTrace bpf = null;
    if (!chosen) {
      backend = defaultBackend(check, plugin);
    }
    if (backend.equals("bpf")) {
      bpf = openBpf();
    }
    if (backend.equals("ptrace")) {
      // SIGKILL while armed usually kills the target (VdsoKillTest, docs/reliability.md); every
      // other way of ending polystack leaves it unharmed.
      console.warn("--backend ptrace: if polystack is killed with SIGKILL (or by the OOM killer)"
          + " while tracing, the target dies of SIGTRAP; end it with Ctrl-C, SIGTERM or"
          + " --duration, or use --backend bpf (or perf) for a process that must not die");
    }
    TraceSession.Options options = new TraceSession.Options(functions,
        TraceSession.Backend.valueOf(backend.toUpperCase(java.util.Locale.ROOT)),
        new HashSet<>(tids), errorsOnly,
        minDuration == null ? 0 : minDuration.toNanos(), maxCalls, followForks,
        duration == null ? 0 : duration.toNanos());
    String session = sessionId();
    VdsoOtlp export = null;
    RuntimeException failure = null;
    try (Writer out = open(file)) {
      // Calls go where they were asked for: --calls, or a file of their own.
      boolean statisticsOnly = summaryOnly || (output == null && !calls);
      CallFormat format = new CallFormat(out, json, statisticsOnly, session, console::warn,
          !functions.isEmpty());
      TraceSession.Sink sink = format;
      if (otlpConfig != null) {
        export = new VdsoOtlp(format, otlpConfig, otlp.interval, ProcFs.system());
        sink = export;
      }
      TraceSession.Result result = null;
      try (StopSignals signals = new StopSignals(console)) {
        TraceSession trace = new TraceSession(ProcFs.system(), plugin, options, sink, bpf);
        result = pid != null
            ? trace.attach(pid, signals::stopRequested)
            : trace.launch(command, as, signals::stopRequested);
      } catch (ProbeException e) {
        failure = e.badRequest() ? new UsageException(e.getMessage())
            : new CommandFailedException(e.getMessage());
      }
      if (result != null && result.outputFailure() != null) {
        failure = new CommandFailedException("cannot write the output: "
            + result.outputFailure().getMessage() + "; the target was detached unharmed");
      } else if (result != null) {
        long sigtraps =
            result.counters().getOrDefault(TraceCounters.SIGTRAP_DELIVERED.name(), 0L);
        if (backend.equals("bpf")) {
          check.record(result.stats().session().calls(), sigtraps); // this boot's evidence
        }
        if (sigtraps > 0) {
          // Not ours to stop without ptrace: say it, since the rule is that the target gets no
          // signal it would not have got (docs/vdso.md, "Stray SIGTRAPs").
          console.warn("the target received " + sigtraps + " SIGTRAP(s) that this machine raises"
              + " for hardware breakpoints now and then (a debug exception without cause); a"
              + " program with SIGTRAP at its default action dies of it: use --backend ptrace,"
              + " which suppresses them, for a process that must not die");
        }
        try {
          format.summary(result, extra(result));
        } catch (IOException e) {
          failure = new CommandFailedException("cannot write " + (output == null ? "the output"
              : output) + ": " + e.getMessage());
        }
      }
      // The local output first: a failing receiver must not cost the user the trace.
      if (export != null) {
        VdsoOtlp.Report report = export.finish(result == null ? Map.of() : result.counters(),
            RecordCommand.FINISH_TIMEOUT);
        if (report != null) {
          console.err().printf("polystack: OTLP: sent %d span(s) to %s%n",
              report.result().spans() - report.result().spansDropped(), report.target());
          console.err().flush();
          if (!report.result().ok() && failure == null) {
            String problem = report.result().message();
            failure = new CommandFailedException("OTLP export to " + report.target()
                + " failed: " + problem + OtlpOptions.advice(problem, "; check that the"
                + " receiver runs, is reachable and accepts traces and metrics"));
          }
        }
      }
    } catch (IOException e) {
      throw new CommandFailedException("cannot write " + (output == null ? "the output" : output)
          + ": " + e.getMessage());
    }
    if (failure != null) {
      throw failure;
    }
  }

  /**
   * bpf, which never stops the target, where it loads and this boot has shown no stray SIGTRAP
   * from hardware breakpoints (its self-test and every bpf session since; docs/vdso.md, "Which
   * backend by default"); else ptrace, which suppresses them, with one line saying why.
   */
  private String defaultBackend(BreakpointCheck check, ProbePlugin plugin) {
    String why = BpfSupport.unavailableReason().orElse(null);
    if (why != null) {
      console.note("tracing with --backend ptrace (stops the target at every call): the bpf"
          + " backend cannot run here (" + why + ")");
      return "ptrace";
    }
    BreakpointCheck.Evidence seen = check.known().orElse(null);
    if (seen == null) {
      try {
        seen = check.selfTest(plugin);
        if (!seen.affected()) {
          console.note("checked this machine's hardware breakpoints for stray SIGTRAPs (2 s,"
              + " once per boot): none in " + seen.calls() + " traced calls; tracing with"
              + " --backend bpf");
        }
      } catch (ProbeException e) {
        console.warn("the hardware-breakpoint self-test could not run (" + e.getMessage()
            + "); tracing with --backend bpf without it");
        return "bpf";
      }
    }
    if (seen.affected()) {
      console.note("tracing with --backend ptrace (stops the target at every call): this"
          + " machine raised " + seen.strays() + " stray SIGTRAP(s) in " + seen.calls()
          + " breakpoint-traced calls since boot, which --backend bpf would let reach the"
          + " target (docs/vdso.md); give --backend bpf to trace without stops anyway");
      return "ptrace";
    }
    return "bpf";
  }

  /** Loads the BPF program for {@code --backend bpf}; a failure is the command's one line. */
  private VdsoTrace openBpf() {
    String why = BpfSupport.unavailableReason().orElse(null);
    if (why == null) {
      try {
        return VdsoTrace.open(BpfProbeBackend.RING_BYTES, BpfProbeBackend.PENDING);
      } catch (BpfLoadException e) {
        why = e.getMessage();
      }
    }
    throw new CommandFailedException("--backend bpf: " + why
        + "; or use --backend ptrace (exact, stops the target at every hit)");
  }

  private Map<String, Object> extra(TraceSession.Result r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("backend", backend);
    m.put("end", r.maxCallsReached() ? "max_calls"
        : r.end() == ProbeBackend.End.STOPPED ? "stopped"
        : r.end() == ProbeBackend.End.DEADLINE ? "duration" : "target_exited");
    if (r.killedAtEnd()) {
      // Not "exited": the session ended first and the launched program went with it.
      m.put("target_exit", "killed_by_polystack");
      console.err().println("polystack: "
          + Summaries.launchedTargetKilled(r.end() == ProbeBackend.End.STOPPED));
    } else if (r.targetExit() != null) {
      m.put("target_exit", r.targetExit().toString());
    }
    m.put("omitted", r.omitted());
    m.put("counters", r.counters());
    return m;
  }

  private Writer open(OutputFile file) {
    if (file == null) {
      return new UnclosingWriter(console.out());
    }
    return new BufferedWriter(new OutputStreamWriter(file.stream(), StandardCharsets.UTF_8));
  }

  private static String sessionId() {
    byte[] b = new byte[8];
    new SecureRandom().nextBytes(b);
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02x", x));
    }
    return sb.toString();
  }

  /** Standard output stays open for the rest of the CLI. */
  private static final class UnclosingWriter extends java.io.FilterWriter {
    UnclosingWriter(Writer w) {
      super(w);
    }

    @Override
    public void close() throws IOException {
      flush();
    }
  }

  /** Durations down to nanoseconds: {@code 500ns}, {@code 50us}, {@code 2ms}, {@code 1s}. */
  static final class ShortDurations implements CommandLine.ITypeConverter<Duration> {
    private static final Pattern FORMAT = Pattern.compile("(\\d{1,12})(ns|us|ms|s)");

    @Override
    public Duration convert(String value) {
      Matcher m = FORMAT.matcher(value.trim());
      if (!m.matches()) {
        throw new CommandLine.TypeConversionException("'" + value + "' is not a duration: write"
            + " a whole number with ns, us, ms or s, e.g. 50us");
      }
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ns" -> Duration.ofNanos(n);
        case "us" -> Duration.ofNanos(n * 1000);
        case "ms" -> Duration.ofMillis(n);
        default -> Duration.ofSeconds(n);
      };
    }
  }
}
