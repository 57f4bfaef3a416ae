package dev.polystack.host.cli;

import dev.polystack.host.output.OutputException;
import dev.polystack.host.output.OutputFile;
import dev.polystack.host.output.Outputs;
import dev.polystack.host.pipeline.CaptureEngine;
import dev.polystack.host.pipeline.CgroupV2;
import dev.polystack.host.pipeline.HostPipeline;
import dev.polystack.host.pipeline.PipelineStats;
import dev.polystack.host.pipeline.PipelineOptions;
import dev.polystack.host.pipeline.ProcessSelection;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.ProfileExporter;
import jakarta.inject.Inject;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/**
 * {@code polystack agent}: continuous profiling of the whole host (or a selection) on the bpf
 * engine, one OTLP profiles request per export interval with one resource per process, and the
 * agent's own health as OTLP metrics. Runs until SIGTERM or SIGINT (then flushes the last
 * interval and exits 0) or {@code --duration}.
 */
@Command(
    name = "agent",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
        "Profile every process on this host (or those selected) continuously, in the kernel at"
            + " the tick (bpf), and send one OTLP profiles request every --export-interval, one"
            + " resource per process, with the agent's health as OTLP metrics. Kernel threads"
            + " and polystack itself are left out; runtimes (LuaJIT) are recognised as they"
            + " appear.",
        "SIGTERM or SIGINT flushes the last interval and exits 0: run it as a service"
            + " (docs/operations.md has a systemd unit) or inside a Collector (docs/otlp.md).",
        ""},
    footer = {"", "Examples:",
        "  polystack agent --otlp-endpoint http://localhost:4317",
        "  polystack agent --comm nginx --rate 49 --otlp-endpoint http://collector:4318"
            + " --otlp-protocol http/protobuf",
        "  polystack agent --cgroup system.slice/app.service -d 60s"
            + " --otlp-endpoint http://localhost:4317"})
final class AgentCommand implements Runnable {
  /** Default sampling rate per CPU: what the OpenTelemetry eBPF profiler samples at. */
  static final int DEFAULT_RATE = 20;
  /** Profiles get two thirds of it, the last metrics the rest (docs/operations.md). */
  private static final Duration FINISH_TIMEOUT = Duration.ofSeconds(15);

  @Option(names = {"--pid", "-p"}, paramLabel = "PID", split = ",",
      description = "Profile this process (repeatable, or PID,PID).")
  List<Integer> pids = new ArrayList<>();

  @Option(names = "--comm", paramLabel = "NAME",
      description = "Profile processes whose executable name is NAME (as pgrep -x), and those"
          + " they create.")
  String comm;

  @Option(names = "--match", paramLabel = "REGEX",
      description = "Profile processes whose command line matches REGEX (as pgrep -f; the"
          + " first 4096 characters), and those they create.")
  String match;

  @Option(names = "--cgroup", paramLabel = "PATH",
      description = "Profile processes in this cgroup v2 (a path under /sys/fs/cgroup, or"
          + " relative to it) or below it.")
  String cgroup;

  @Option(names = {"--rate", "-r"}, paramLabel = "HZ", defaultValue = "" + DEFAULT_RATE,
      description = "Samples per second per CPU (default: ${DEFAULT-VALUE}).")
  int rate;

  @Option(names = {"--duration", "-d"}, paramLabel = "D", converter = Durations.class,
      description = "Stop after D (default: run until SIGTERM or SIGINT).")
  Duration duration;

  @Option(names = "--command-line",
      description = "Add each process's command line to its resource (process.command_line):"
          + " off by default, command lines can hold secrets.")
  boolean commandLine;

  @Option(names = "--stats-json", paramLabel = "FILE",
      description = "At exit, write the agent's figures (samples, losses by reason, processes,"
          + " export results) as JSON.")
  Path statsJson;

  @Option(names = {"--verbose", "-v"},
      description = "Print a line per export interval.")
  boolean verbose;

  @Option(names = "--event", paramLabel = "EVENT", defaultValue = "cpu",
      description = "cpu (default) or alloc: the allocations of the selected processes (--pid,"
          + " --comm, --match), their C library's allocator probed with uprobe sessions, one"
          + " profile per sample type and interval (docs/allocations.md).")
  String event;

  @Option(names = "--alloc-rate", paramLabel = "BYTES", defaultValue = "524288",
      description = "--event alloc: one sample per BYTES allocated on average (default:"
          + " ${DEFAULT-VALUE}, 512 KiB; 1: every call).")
  long allocRate;

  @Mixin OtlpOptions otlp = new OtlpOptions();

  @ParentCommand PolystackCommand parent;

  private final PluginLoader loader;
  private final PluginGuard guard;
  private final Console console;
  private final Outputs outputs;

  @Inject
  AgentCommand(PluginLoader loader, PluginGuard guard, Console console, Outputs outputs) {
    this.loader = loader;
    this.guard = guard;
    this.console = console;
    this.outputs = outputs;
  }

  @Override
  public void run() {
    OtlpConfig config = otlp.config(System.getenv());
    if (config == null) {
      throw new UsageException("the agent sends OTLP: give --otlp-endpoint URL (or set"
          + " OTEL_EXPORTER_OTLP_ENDPOINT)");
    }
    PipelineOptions options = new PipelineOptions(checkedRate(),
        SamplingOptions.DEFAULT_STACK_BYTES, SamplingOptions.DEFAULT_MAX_DEPTH, selection(),
        commandLine, PipelineOptions.DEFAULT_MAX_PROCESSES,
        PipelineOptions.DEFAULT_MAX_INTERVAL_SAMPLES, false);
    options = withEvent(options);
    long durationNanos = duration == null ? 0 : duration.toNanos();
    if (duration != null && durationNanos <= 0) {
      throw new UsageException("--duration must be positive");
    }
    CaptureEngine engine = HostPipeline.bpfEngine(options);
    engine.check().ifPresent(why -> {
      throw new CommandFailedException("cannot run the agent: " + why + "; it needs bpf"
          + " capture (per-process perf or ptrace sampling cannot be an always-on agent)");
    });
    OtlpOptions.warnIfInClear(config, console::warn);
    OutputFile statsFile = null;
    try {
      if (statsJson != null) {
        statsFile = outputs.replaceAtEnd(statsJson, "--stats-json");
      }
      var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
      HostPipeline pipeline = new HostPipeline(ProcFs.system(), registry, guard, console::warn,
          options);
      AgentExport export = new AgentExport(config, otlp.interval);
      long start = System.nanoTime();
      double cpuAtStart = AgentExport.cpuSeconds();
      String what = event.equals("alloc")
          ? "the allocations of " + options.selection().describe() + ", one sample per "
              + (options.allocMeanBytes() == 0 ? "call" : options.allocMeanBytes() + " bytes")
          : options.selection().describe() + " at " + rate + " Hz per CPU";
      try (StopSignals signals = new StopSignals(console)) {
        // Said once the capture runs (and, for allocations, the chosen processes are probed).
        pipeline.run(engine, otlp.interval, durationNanos, signals::stopRequested,
            verbose ? verbose(export) : export, select -> console.note(String.format(Locale.ROOT,
                "agent: profiling %s, exporting every %s to %s", what,
                interval(otlp.interval), config.baseUri())));
      } catch (CaptureEngine.EngineException | SamplingException e) {
        throw new CommandFailedException("cannot run the agent: " + e.getMessage());
      }
      String metricsFailure = export.finish(FINISH_TIMEOUT);
      double seconds = (System.nanoTime() - start) / 1e9;
      PipelineStats stats = export.stats();
      ProfileExporter.Stats sent = export.exportStats();
      if (statsFile != null) {
        writeStats(statsFile, stats, sent, seconds, AgentExport.cpuSeconds() - cpuAtStart);
      }
      console.note(event.equals("alloc") ? allocSummary(stats, sent, seconds)
          : summary(stats, sent, seconds));
      sent.messages().forEach(m -> console.warn("OTLP export: " + m));
      if (!metricsFailure.isEmpty()) {
        console.warn("OTLP metrics: " + metricsFailure);
      }
    } catch (OutputException e) {
      throw OutputErrors.toCli(e);
    } finally {
      if (statsFile != null) {
        statsFile.close();
      }
    }
  }

  /** --event alloc: the same selection, its allocations instead of its CPU time. */
  private PipelineOptions withEvent(PipelineOptions options) {
    if (event.equals("cpu")) {
      if (allocRate != 524288) {
        throw new UsageException("--alloc-rate is for --event alloc");
      }
      return options;
    }
    if (!event.equals("alloc")) {
      throw new UsageException("--event must be cpu or alloc, not " + event);
    }
    if (allocRate < 1) {
      throw new UsageException("--alloc-rate must be >= 1 byte: " + allocRate);
    }
    if (options.selection().isHostWide() || cgroup != null) {
      throw new UsageException("--event alloc probes the allocator of the processes it is given:"
          + " select them with --pid, --comm or --match (every process's every allocation would"
          + " trap, docs/allocations.md)");
    }
    return options.withAllocations(allocRate == 1 ? 0 : allocRate);
  }

  private static String interval(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
  }

  private int checkedRate() {
    if (rate < 1 || rate > 1000) {
      throw new UsageException("--rate " + rate + ": must be 1..1000 Hz per CPU");
    }
    return rate;
  }

  private ProcessSelection selection() {
    for (int p : pids) {
      if (p <= 0) {
        throw new UsageException("--pid " + p + ": a process id is a positive number");
      }
    }
    if (comm != null && comm.isBlank() || cgroup != null && cgroup.isBlank()) {
      throw new UsageException("--comm and --cgroup take a non-empty value");
    }
    Pattern pattern = null;
    if (match != null) {
      try {
        pattern = Pattern.compile(match);
      } catch (PatternSyntaxException e) {
        throw new UsageException("--match " + match + ": not a regular expression: "
            + e.getDescription());
      }
    }
    if (cgroup != null) {
      Path dir = CgroupV2.directory(CgroupV2.normalize(cgroup));
      if (!java.nio.file.Files.isDirectory(dir)) {
        throw new UsageException("--cgroup " + cgroup + ": no such cgroup (" + dir + " is not"
            + " a directory)");
      }
    }
    if (pids.isEmpty() && comm == null && pattern == null && cgroup == null) {
      return ProcessSelection.hostWide();
    }
    return new ProcessSelection(new HashSet<>(pids), comm == null ? "" : comm, pattern,
        cgroup == null ? "" : cgroup);
  }

  private HostPipeline.Sink verbose(AgentExport export) {
    return (profiles, stats, last) -> {
      export.interval(profiles, stats, last);
      long samples = profiles.stream()
          .mapToLong(p -> dev.polystack.otel.model.Sample.count(p.recording().samples())).sum();
      console.note(String.format(Locale.ROOT, "interval: %d samples from %d processes;"
          + " %d processes described", samples, profiles.size(), stats.processesTracked()));
    };
  }

  private static String summary(PipelineStats stats, ProfileExporter.Stats sent,
      double seconds) {
    long lost = LossGroups.samplesLost(stats.losses()).values().stream()
        .mapToLong(Long::longValue).sum();
    return String.format(Locale.ROOT, "agent: %s from %s in %.1f s; %d lost;"
        + " exported %s (%d samples), %d failed, %d samples dropped",
        Summaries.plural(stats.samples(), "sample"),
        stats.processesSeen() + (stats.processesSeen() == 1 ? " process" : " processes"),
        seconds, lost,
        Summaries.plural(sent.requests(), "request"), sent.samplesSent(), sent.requestsFailed(),
        sent.samplesDropped());
  }

  private static String allocSummary(PipelineStats stats, ProfileExporter.Stats sent,
      double seconds) {
    Map<String, Long> f = stats.figures();
    long lost = LossGroups.samplesLost(stats.losses()).values().stream()
        .mapToLong(Long::longValue).sum();
    return String.format(Locale.ROOT, "agent: %s sampled of %s from %s in %.1f s; %d lost;"
        + " exported %s, %d failed",
        Summaries.plural(f.getOrDefault("capture_alloc_sampled", 0L), "allocation"),
        Summaries.plural(f.getOrDefault("capture_alloc_calls", 0L), "allocator call"),
        stats.processesSeen() + (stats.processesSeen() == 1 ? " process" : " processes"),
        seconds, lost, Summaries.plural(sent.requests(), "request"), sent.requestsFailed());
  }

  /** The agent's --stats-json document (docs/operations.md, "The agent"). */
  static String statsJson(PipelineStats s, ProfileExporter.Stats e, double seconds,
      double cpuSeconds, long rssBytes) {
    StringBuilder b = new StringBuilder("{");
    b.append("\"seconds\":").append(String.format(Locale.ROOT, "%.3f", seconds));
    b.append(",\"cpu_seconds\":").append(String.format(Locale.ROOT, "%.3f", cpuSeconds));
    b.append(",\"rss_bytes\":").append(rssBytes);
    b.append(",\"samples\":").append(s.samples());
    b.append(",\"processes_tracked\":").append(s.processesTracked());
    b.append(",\"processes_seen\":").append(s.processesSeen());
    // Each counter where its declaration's kind puts it, as in record's --stats-json.
    b.append(",\"losses\":").append(object(Summaries.losses(s.losses())));
    b.append(",\"errors\":").append(object(s.errors()));
    Map<String, Long> capture = new TreeMap<>(s.figures());
    Counters.ofKind(s.losses(), CounterKind.CAPTURE_FIGURE).forEach(capture::putIfAbsent);
    b.append(",\"capture\":").append(object(capture));
    b.append(",\"notes\":").append(object(Summaries.notes(s.losses())));
    b.append(",\"export\":{\"requests\":").append(e.requests())
        .append(",\"samples_sent\":").append(e.samplesSent())
        .append(",\"requests_failed\":").append(e.requestsFailed())
        .append(",\"samples_dropped\":").append(e.samplesDropped())
        .append(",\"profiles_rejected\":").append(e.rejected()).append("}}\n");
    return b.toString();
  }

  private static void writeStats(OutputFile file, PipelineStats s, ProfileExporter.Stats e,
      double seconds, double cpuSeconds) throws OutputException {
    String json = statsJson(s, e, seconds, cpuSeconds, AgentExport.rssBytes());
    try {
      file.stream().write(json.getBytes(StandardCharsets.UTF_8));
      file.commit();
    } catch (IOException ex) {
      throw new CommandFailedException("cannot write " + file.path() + ": "
          + OutputFile.reason(ex) + "; choose another --stats-json");
    }
  }

  private static String object(Map<String, Long> m) {
    StringBuilder b = new StringBuilder("{");
    new TreeMap<>(m).forEach((k, v) -> { // sorted, so two runs' files compare line by line
      if (b.length() > 1) {
        b.append(',');
      }
      b.append(Json.quote(k)).append(':').append(v);
    });
    return b.append('}').toString();
  }
}
