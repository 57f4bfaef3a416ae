package dev.polystack.host.embed;

import dev.polystack.host.pipeline.CaptureEngine;
import dev.polystack.host.pipeline.HostPipeline;
import dev.polystack.host.pipeline.PipelineOptions;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.plugins.PluginPathException;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplingOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * polystack's host-wide profiler inside another JVM program: what {@code polystack agent} runs,
 * with each interval handed to an {@link IntervalListener} instead of sent over OTLP.
 *
 * <pre>{@code
 * Profiler profiler = Profiler.builder().selection(Selection.ofPids(pid)).build();
 * profiler.check().ifPresent(why -> { throw new IllegalStateException(why); });
 * try (ProfilingSession session = profiler.start(interval -> send(interval.toOtlpRequest()))) {
 *   ...
 *   ProfilerStats stats = session.stop(); // the last interval has reached the listener
 * }
 * }</pre>
 *
 * <p>A profiler is immutable and holds nothing: each {@link #start} loads the plug-ins and
 * opens its own capture, and several sessions may run at once. It samples on the bpf engine
 * (the kernel copies each stack at the tick; the target is never stopped), which needs root or
 * CAP_BPF and CAP_PERFMON, a kernel with BTF, and libbpf 1.x; {@link #check()} says which is
 * missing. docs/embedding.md is the reference.
 */
public final class Profiler {
  private final ProfilerConfig config;
  private final Consumer<String> warnings;

  private Profiler(ProfilerConfig config, Consumer<String> warnings) {
    this.config = config;
    this.warnings = warnings;
  }

  /** A builder with the defaults of {@link ProfilerConfig}: the whole host at 20 Hz per CPU. */
  public static Builder builder() {
    return new Builder();
  }

  /** A profiler for {@code config}, warning through {@code warnings} (called from any thread). */
  public static Profiler of(ProfilerConfig config, Consumer<String> warnings) {
    return new Profiler(Objects.requireNonNull(config, "config"),
        safe(Objects.requireNonNull(warnings, "warnings")));
  }

  /** What this profiler runs with. */
  public ProfilerConfig config() {
    return config;
  }

  /**
   * Why a session cannot run here, in one line with what to do (no BPF rights, no kernel BTF,
   * no libbpf, kernel lockdown, a selected cgroup that does not exist); empty when it can. Reads
   * a few files, loads nothing.
   */
  public Optional<String> check() {
    Optional<String> bpf = HostPipeline.bpfEngine(options()).check();
    if (bpf.isPresent()) {
      return bpf;
    }
    String cgroup = config.selection().cgroup();
    if (!cgroup.isEmpty()) {
      Path dir = cgroupDirectory(cgroup);
      if (!Files.isDirectory(dir)) {
        return Optional.of("cgroup " + cgroup + ": no such cgroup (" + dir + " is not a"
            + " directory); select an existing cgroup v2 path");
      }
    }
    return Optional.empty();
  }

  /**
   * Starts a session: loads the plug-ins, starts the capture on its own thread, and returns once
   * it runs. {@code listener} gets every interval ({@link ProfilerConfig#interval()}) on the
   * session's listener thread until {@link ProfilingSession#stop()}.
   *
   * @throws ProfilerException when {@link #check()} fails, a plug-in directory cannot be read,
   *     or the kernel refuses the capture; the message says why in one line
   */
  public ProfilingSession start(IntervalListener listener) throws ProfilerException {
    Objects.requireNonNull(listener, "listener");
    Optional<String> why = check();
    if (why.isPresent()) {
      throw new ProfilerException("cannot profile: " + why.get());
    }
    PluginRegistry registry;
    try {
      registry = new PluginLoader().load(config.pluginPath());
    } catch (PluginPathException e) {
      // The loader words it for the command line's option; here it is a builder setting.
      throw new ProfilerException("cannot load plug-ins: "
          + e.getMessage().replaceFirst("^--plugin-path ", "plug-in directory "), e);
    }
    registry.refusals().forEach(r -> warnings.accept("refused plug-in " + r));
    registry.warnings().forEach(warnings);
    PluginGuard guard = new PluginGuard(warnings);
    PipelineOptions options = options();
    HostPipeline pipeline = new HostPipeline(ProcFs.system(), registry, guard, warnings,
        options);
    CaptureEngine engine = HostPipeline.bpfEngine(options);
    return ProfilingSession.start(pipeline, engine, config.interval(), guard, listener,
        config.listenerQueue(), warnings);
  }

  private PipelineOptions options() {
    return new PipelineOptions(config.rateHz(), SamplingOptions.DEFAULT_STACK_BYTES,
        SamplingOptions.DEFAULT_MAX_DEPTH, config.selection().toPipeline(),
        config.commandLine(), config.maxProcesses(), config.maxIntervalSamples(), false);
  }

  static Path cgroupDirectory(String cgroup) {
    String relative = cgroup.startsWith("/sys/fs/cgroup")
        ? cgroup.substring("/sys/fs/cgroup".length()) : cgroup;
    return Path.of("/sys/fs/cgroup").resolve(relative.replaceFirst("^/+", ""));
  }

  /** Warnings that throw are the embedder's bug, not a reason to stop profiling. */
  private static Consumer<String> safe(Consumer<String> warnings) {
    return line -> {
      try {
        warnings.accept(line);
      } catch (RuntimeException e) {
        // nowhere left to report it
      }
    };
  }

  private static void log(String line) {
    System.getLogger(Profiler.class.getPackageName()).log(System.Logger.Level.WARNING, line);
  }

  /** Fills a {@link ProfilerConfig}; every setter may be skipped for its default. */
  public static final class Builder {
    private int rateHz = ProfilerConfig.DEFAULT_RATE_HZ;
    private Selection selection = Selection.hostWide();
    private Duration interval = ProfilerConfig.DEFAULT_INTERVAL;
    private final List<Path> pluginPath = new ArrayList<>();
    private boolean commandLine;
    private int maxProcesses = ProfilerConfig.DEFAULT_MAX_PROCESSES;
    private int maxIntervalSamples = ProfilerConfig.DEFAULT_MAX_INTERVAL_SAMPLES;
    private int listenerQueue = ProfilerConfig.DEFAULT_LISTENER_QUEUE;
    private Consumer<String> warnings = Profiler::log;

    private Builder() {}

    /** Samples per second per CPU, 1 to 1000 (default 20). */
    public Builder rateHz(int hz) {
      this.rateHz = hz;
      return this;
    }

    /** The processes to profile (default: {@link Selection#hostWide()}). */
    public Builder selection(Selection selection) {
      this.selection = Objects.requireNonNull(selection, "selection");
      return this;
    }

    /** How often the listener gets an interval, 100 ms to 1 hour (default 10 s). */
    public Builder interval(Duration interval) {
      this.interval = Objects.requireNonNull(interval, "interval");
      return this;
    }

    /** A directory of third-party plug-in jars to load besides the bundled plug-ins. */
    public Builder addPluginDirectory(Path directory) {
      pluginPath.add(Objects.requireNonNull(directory, "directory"));
      return this;
    }

    /** Whether resources carry {@code process.command_line} (default off: secrets). */
    public Builder commandLine(boolean commandLine) {
      this.commandLine = commandLine;
      return this;
    }

    /** Processes described at once (default 1024). */
    public Builder maxProcesses(int max) {
      this.maxProcesses = max;
      return this;
    }

    /** Samples one interval holds over every process (default 262144). */
    public Builder maxIntervalSamples(int max) {
      this.maxIntervalSamples = max;
      return this;
    }

    /** Intervals waiting for a slow listener before new ones are dropped (default 6). */
    public Builder listenerQueue(int intervals) {
      this.listenerQueue = intervals;
      return this;
    }

    /**
     * Where warning lines go (a refused plug-in, a plug-in that threw, a listener that threw,
     * a selected pid that does not exist); default: the {@code dev.polystack.host.embed}
     * {@link System.Logger} at WARNING. Called from the session's threads.
     */
    public Builder warnings(Consumer<String> warnings) {
      this.warnings = Objects.requireNonNull(warnings, "warnings");
      return this;
    }

    /**
     * The profiler.
     *
     * @throws IllegalArgumentException naming the setting that is out of range
     */
    public Profiler build() {
      return of(new ProfilerConfig(rateHz, selection, interval, pluginPath, commandLine,
          maxProcesses, maxIntervalSamples, listenerQueue), warnings);
    }
  }
}
