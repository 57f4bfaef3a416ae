package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.ProbeMonitor;
import dev.polystack.host.launch.Accounts;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.monitor.ProbeSession;
import dev.polystack.host.monitor.SiteDecoders;
import dev.polystack.host.monitor.RuntimeSites;
import dev.polystack.host.monitor.SiteSpec;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.output.OutputException;
import dev.polystack.host.output.OutputFile;
import dev.polystack.host.output.Outputs;
import dev.polystack.host.plugins.LoadedPlugin;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.probes.BreakpointCheck;
import dev.polystack.host.probes.ProbeException;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.ProbeSpans;
import dev.polystack.plugin.api.ArgumentDecoder;
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
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code polystack probe}: monitors on uprobes at functions of a process's modules. */
@Command(
    name = "probe",
    mixinStandardHelpOptions = true,
    description = "Count the calls of functions of a running process (--pid) or a command (after"
        + " --), measure their latency or print their arguments, with uprobes (or, with --hw,"
        + " hardware breakpoints) whose monitors run in the kernel. SITE:"
        + " MODULE:SYMBOL[+OFF][%%return], e.g. libc.so.6:write; with --hw also"
        + " [vdso]:clock_gettime or 0xADDRESS; and lua:CHUNK:LINE, a Lua function of a LuaJIT"
        + " process, counted with a hardware watchpoint (implies --hw) (docs/probes.md).")
final class ProbeCommand implements Runnable {

  @Option(names = {"--pid", "-p"}, paramLabel = "PID",
      description = "Probe this running process.")
  Integer pid;

  @Parameters(paramLabel = "SITE", arity = "0..*",
      description = "Sites, then (after --) the command to launch.")
  List<String> positional = new ArrayList<>();

  @Option(names = "--monitor", paramLabel = "MONITOR", defaultValue = "count",
      description = "count (calls, in the kernel; no return probe), latency (log2 histogram of"
          + " entry-to-return time, in the kernel) or args (one record per hit: rdi..r9 at"
          + " entry, rax at a %%return site, also decoded where a plug-in knows the function,"
          + " e.g. clock_gettime; with --otlp-endpoint a %%return site's calls are also"
          + " exported as spans). Default: ${DEFAULT-VALUE}.")
  String monitor;

  @Option(names = "--hw", description = "Place every site with hardware breakpoints (4 debug"
      + " registers per thread: a site takes one, and one more per ret instruction when its"
      + " return is watched, for %%return and latency): no byte of the target changes, and code"
      + " no file holds can be probed (the vDSO, 0xADDRESS in JIT code).")
  boolean hardware;

  @Option(names = "--per-thread", description = "Also keep the figures per thread (up to "
      + ProbeMonitor.THREADS + " site-thread pairs; more are counted as thread_table_full).")
  boolean perThread;

  @Option(names = "--format", paramLabel = "FORMAT", defaultValue = "text",
      description = "text or json (JSON lines). Default: ${DEFAULT-VALUE}.")
  String format;

  @Option(names = {"--output", "-o"}, paramLabel = "FILE", description = "Write here, not to"
      + " standard output (mode 0600; an existing file is replaced, a symbolic link refused).")
  Path output;

  @Option(names = {"--duration", "-d"}, paramLabel = "D", converter = Durations.class,
      description = "End after this long (default: at Ctrl-C or the target's exit).")
  Duration duration;

  @Mixin OtlpOptions otlp = new OtlpOptions();

  @Mixin LaunchOptions launchAs = new LaunchOptions();

  @Spec CommandSpec spec;

  @ParentCommand PolystackCommand parent;

  private final PluginLoader loader;
  private final Console console;
  private final Outputs outputs;
  private PluginRegistry registry;

  @Inject
  ProbeCommand(PluginLoader loader, Console console, Outputs outputs) {
    this.loader = loader;
    this.console = console;
    this.outputs = outputs;
  }

  @Override
  public void run() {
    List<String> command = command();
    List<String> sites = positional.subList(0, positional.size() - command.size());
    if ((pid == null) == command.isEmpty()) {
      throw new UsageException("give either --pid PID or a command after --, not both or"
          + " neither");
    }
    if (pid != null && pid <= 0) {
      throw new UsageException("--pid " + pid + ": a process id is a positive number");
    }
    if (pid != null) {
      KernelThreads.refuse(Path.of("/proc"), pid, "--pid");
      if (!Path.of("/proc", Integer.toString(pid)).toFile().isDirectory()) {
        throw new UsageException("--pid " + pid + ": no such process; check the pid with ps");
      }
    }
    launchAs.checkLaunching(!command.isEmpty());
    if (sites.isEmpty()) {
      throw new UsageException("name at least one site, e.g. polystack probe --pid PID"
          + " libc.so.6:write");
    }
    List<SiteSpec> specs = new ArrayList<>();
    for (String s : sites) {
      try {
        specs.add(SiteSpec.parse(s));
      } catch (IllegalArgumentException e) {
        throw new UsageException(e.getMessage());
      }
    }
    ProbeMonitor.Kind kind = switch (monitor) {
      case "count" -> ProbeMonitor.Kind.COUNT;
      case "latency" -> ProbeMonitor.Kind.LATENCY;
      case "args" -> ProbeMonitor.Kind.ARGS;
      default -> throw new UsageException("--monitor " + monitor
          + ": expected count, latency or args");
    };
    boolean runtime = specs.stream().anyMatch(SiteSpec::runtime);
    if (runtime && !command.isEmpty()) {
      throw new UsageException("a Lua site names a function of a running VM, and a launched"
          + " command is probed before its first Lua line runs: start it, then probe it with"
          + " --pid");
    }
    for (SiteSpec s : specs) {
      if (s.runtime() && kind != ProbeMonitor.Kind.COUNT) {
        throw new UsageException(s + ": a Lua site counts entries only (--monitor count): at"
            + " the interpreter's read of the function's first instruction the registers hold"
            + " the interpreter's state, not Lua arguments, and no return is watched");
      }
    }
    if (!format.equals("text") && !format.equals("json")) {
      throw new UsageException("--format " + format + ": expected text or json");
    }
    if (duration != null && (duration.isNegative() || duration.isZero())) {
      throw new UsageException("--duration must be positive");
    }
    OtlpConfig otlpConfig = otlp.config(System.getenv());
    OutputFile file;
    try {
      file = output == null ? null : outputs.writeNow(output, "--output", false);
    } catch (OutputException e) {
      throw OutputErrors.toCli(e);
    }
    Credentials as = command.isEmpty() ? null
        : launchAs.resolve(System.getenv(), Accounts.effectiveUid(), console::note);
    // A Lua site is a data watchpoint: the whole run goes to hardware breakpoints.
    boolean hw = hardware || runtime;
    BreakpointCheck check = hw ? checkBreakpoints() : null;
    try {
      probe(specs, command, kind, otlpConfig, file, as, check, hw, runtime);
    } finally {
      if (file != null) {
        file.close();
      }
    }
  }

  /** The plug-ins, loaded once per run (the self-test and Lua sites both need them). */
  private PluginRegistry plugins() {
    if (registry == null) {
      registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    }
    return registry;
  }

  /** The arguments after {@code --}: picocli hands them over as positionals too. */
  private List<String> command() {
    List<String> original = spec.commandLine().getParseResult().originalArgs();
    int dash = original.indexOf("--");
    if (dash < 0) {
      return List.of();
    }
    int n = original.size() - dash - 1;
    return n > positional.size() ? List.of()
        : List.copyOf(positional.subList(positional.size() - n, positional.size()));
  }

  /**
   * Refuses --hw on a machine whose breakpoints have raised stray SIGTRAPs this boot: a BPF
   * handler cannot stop one, and the target would get a signal it would not have got
   * (docs/vdso.md, "Stray SIGTRAPs"). Runs the vdso tracer's once-per-boot self-test first when
   * nothing is known yet.
   */
  private BreakpointCheck checkBreakpoints() {
    BreakpointCheck check = BreakpointCheck.system();
    BreakpointCheck.Evidence seen = check.known().orElse(null);
    if (seen == null && BpfSupport.unavailableReason().isEmpty()) {
      ProbePlugin plugin = plugins().probePlugins().stream()
          .filter(p -> p.id().equals("vdso")).map(p -> (ProbePlugin) p.plugin())
          .findFirst().orElse(null);
      try {
        if (plugin == null) {
          throw new ProbeException("the vdso plug-in, which runs it, is not loaded");
        }
        seen = check.selfTest(plugin);
        if (!seen.affected()) {
          console.note("checked this machine's hardware breakpoints for stray SIGTRAPs (2 s,"
              + " once per boot): none in " + seen.calls() + " traced calls");
        }
      } catch (ProbeException e) {
        console.warn("the hardware-breakpoint self-test could not run (" + e.getMessage()
            + "); placing the breakpoints without it");
      }
    }
    if (seen != null && seen.affected()) {
      throw new CommandFailedException("--hw: this machine raised " + seen.strays() + " stray"
          + " SIGTRAP(s) in " + seen.calls() + " breakpoint hits since boot, which would reach"
          + " the target (docs/vdso.md, \"Stray SIGTRAPs\"); probe without --hw");
    }
    return check;
  }

  /**
   * Argument decoders for an args run: each probe plug-in asked in turn (by id) through the
   * guard, the first offer taken. Other monitors record no arguments and load no plug-in.
   */
  private SiteDecoders.Source decoderSource(ProbeMonitor.Kind kind) {
    if (kind != ProbeMonitor.Kind.ARGS) {
      return (image, symbol) -> Optional.empty();
    }
    List<LoadedPlugin> probes = plugins().probePlugins();
    PluginGuard guard = new PluginGuard(console::warn);
    return (image, symbol) -> {
      for (LoadedPlugin p : probes) {
        Optional<ArgumentDecoder> d = guard.call(p, "argumentDecoder",
            () -> ((ProbePlugin) p.plugin()).argumentDecoder(image, symbol).orElse(null));
        if (d.isPresent()) {
          return Optional.of(new SiteDecoders.Offer(p.id(), d.get()));
        }
      }
      return Optional.empty();
    };
  }

  /** Adds the run's breakpoint hits and stray SIGTRAPs to this boot's evidence; warns of any. */
  private void recordBreakpoints(BreakpointCheck check, ProbeSession.Result r) {
    Map<String, Long> c = r.figures().counters();
    long sigtraps = c.getOrDefault(ProbeMonitor.SIGTRAP_DELIVERED, 0L);
    check.record(c.getOrDefault("entries", 0L), sigtraps);
    if (sigtraps > 0) {
      console.warn("the target received " + sigtraps + " SIGTRAP(s) that this machine raises"
          + " for hardware breakpoints now and then (a debug exception without cause); a"
          + " program with SIGTRAP at its default action dies of it: probe without --hw");
    }
  }

  private void probe(List<SiteSpec> specs, List<String> command, ProbeMonitor.Kind kind,
      OtlpConfig otlpConfig, OutputFile file, Credentials as, BreakpointCheck check, boolean hw,
      boolean runtime) {
    OtlpOptions.warnIfInClear(otlpConfig, console::warn);
    String session = sessionId();
    RuntimeException failure = null;
    try (Writer out = file == null ? new StdoutWriter(console.out())
        : new BufferedWriter(new OutputStreamWriter(file.stream(), StandardCharsets.UTF_8))) {
      ProbeFormat local = new ProbeFormat(out, format.equals("json"), session, kind);
      ProbeOtlp export = otlpConfig == null ? null
          : new ProbeOtlp(local, otlpConfig, otlp.interval, ProcFs.system(), kind);
      ProbeSession.Sink sink = export == null ? local : export;
      ProbeSession.Options options = new ProbeSession.Options(kind, perThread,
          duration == null ? 0 : duration.toNanos(), hw);
      ProbeSession.Result result = null;
      try (StopSignals signals = new StopSignals(console)) {
        ProbeSession probes = new ProbeSession(ProcFs.system(), decoderSource(kind),
            console::warn, !runtime ? RuntimeSites.NONE
            : RuntimeSites.of(ProcFs.system(), plugins(), new PluginGuard(console::warn),
                console::warn));
        result = pid != null
            ? probes.attach(pid, specs, options, signals::stopRequested, sink)
            : probes.launch(command, as, specs, options, signals::stopRequested, sink);
      } catch (ProbeSession.BadInput e) {
        failure = new UsageException(e.getMessage());
      } catch (ProbeSession.Failure e) {
        failure = new CommandFailedException(e.getMessage());
      }
      if (result != null && check != null) {
        recordBreakpoints(check, result);
      }
      ProbeSpans.Result spans = export == null ? null
          : export.finishSpans(RecordCommand.FINISH_TIMEOUT);
      if (result != null) {
        local.summary(result, extra(result, spans));
      }
      if (export != null) {
        String problem = export.finish(result, RecordCommand.FINISH_TIMEOUT);
        if (problem != null && !problem.isEmpty() && failure == null) {
          failure = new CommandFailedException("OTLP export to " + otlpConfig.baseUri()
              + " failed: " + problem + OtlpOptions.advice(problem, "; check that the receiver"
                  + " runs, is reachable and accepts metrics and traces"));
        }
      }
    } catch (IOException e) {
      throw new CommandFailedException("cannot write " + (output == null ? "the output"
          : output) + ": " + e.getMessage());
    }
    if (failure != null) {
      throw failure;
    }
  }

  private Map<String, Object> extra(ProbeSession.Result r, ProbeSpans.Result spans) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("end", r.end().name().toLowerCase(Locale.ROOT));
    if (r.killedAtEnd()) {
      m.put("target_exit", "killed_by_polystack");
      console.err().println("polystack: " + Summaries.launchedTargetKilled(
          r.end() == ProbeSession.End.STOPPED));
    } else if (r.targetExit() != null) {
      m.put("target_exit", r.targetExit().toString());
    }
    if (r.hitsUndelivered() > 0) {
      m.put("records_unreadable", r.hitsUndelivered());
    }
    if (spans != null) {
      m.put("spans", spans.spans());
      m.put(ProbeOtlp.SPANS_DROPPED, spans.dropped());
    }
    return m;
  }

  private static String sessionId() {
    byte[] b = new byte[8];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /** Standard output stays open for the rest of the CLI. */
  private static final class StdoutWriter extends java.io.FilterWriter {
    StdoutWriter(Writer w) {
      super(w);
    }

    @Override
    public void close() throws IOException {
      flush();
    }
  }
}
