package dev.polystack.host.session;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.pipeline.CaptureEngine;
import dev.polystack.host.pipeline.HostPipeline;
import dev.polystack.host.pipeline.PipelineStats;
import dev.polystack.host.pipeline.ProcessFigures;
import dev.polystack.host.pipeline.ProcessProfile;
import dev.polystack.host.pipeline.PipelineOptions;
import dev.polystack.host.pipeline.ProcessSelection;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.IntConsumer;

/**
 * A bpf- or perf-mode {@code record} (and {@code top}) on the host-wide pipeline: one capture,
 * one process table, one walk thread whatever the number of processes; a followed process's
 * children are targets from their fork (the kernel's fork event), so a child shorter-lived than
 * any /proc scan is still recorded. A record of one process gives that process's recording as
 * it is; several are joined, each sample naming its process ({@link RecordingMerger}). Ptrace
 * mode, which stops threads, records with {@link RecordSession}'s own sessions.
 *
 * <p>The run ends at the duration, on the user's stop, when a launched command exits, or when
 * every recorded process has exited.
 */
final class PipelineRecord {
  /** The interval of a run that streams nothing: one cut, at the end. */
  private static final Duration WHOLE_RUN = Duration.ofDays(365);

  private final ProcFs proc;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;
  private final Credentials launchAs;
  private final Stream stream;

  /**
   * How the run streams its intervals, or null when it does not.
   *
   * @param retain the final recording still holds every sample (for a local file)
   */
  record Stream(Duration interval, IntervalListener listener, boolean retain) {
    Stream {
      if (interval.isNegative() || interval.isZero()) {
        throw new IllegalArgumentException("export interval must be positive");
      }
      java.util.Objects.requireNonNull(listener, "listener");
    }
  }

  PipelineRecord(ProcFs proc, PluginRegistry plugins, PluginGuard guard, Consumer<String> warn,
      Credentials launchAs, Stream stream) {
    this.proc = proc;
    this.plugins = plugins;
    this.guard = guard;
    this.warn = warn;
    this.launchAs = launchAs;
    this.stream = stream;
  }

  /** The pipeline's options for a record of {@code targets}. */
  static PipelineOptions options(MultiRecord.Targets targets, SamplingOptions options) {
    return new PipelineOptions(options.rateHz(), options.stackBytes(),
        options.maxDepth(), new ProcessSelection(new HashSet<>(targets.pids()), "", null, ""),
        false, PipelineOptions.DEFAULT_MAX_PROCESSES, Integer.MAX_VALUE,
        targets.subprocesses(), targets.user(), true, options.threads());
  }

  /** A record of one process (or one launched command) rather than of several. */
  static boolean single(MultiRecord.Targets targets) {
    return !targets.subprocesses() && targets.pids().size() + (targets.command().isEmpty() ? 0
        : 1) == 1;
  }

  /**
   * Records until the duration ends, {@code stop} says so, or the targets are gone, with {@code
   * engine} (made for {@link #options}; {@link CaptureEngine#check} is the caller's), or with
   * {@code fallback} (null: none) when {@code engine} cannot start; a launched command's pid
   * goes to {@code started} while it stands in its exec.
   */
  RecordSession.Result run(MultiRecord.Targets targets, SamplingOptions options,
      CaptureEngine engine, CaptureEngine fallback, BooleanSupplier stop,
      RecordSession.Progress progress, IntConsumer started) throws SamplingException {
    try {
      return attempt(targets, options, engine, stop, progress, started);
    } catch (CaptureEngine.EngineException e) {
      if (fallback == null) {
        throw new SamplingException("cannot sample in " + engine.name() + " mode: "
            + e.getMessage() + (engine.name().equals("bpf")
                ? "; use --mode perf or --mode ptrace" : "; or use --mode ptrace"));
      }
      // The engine failed to start, before anything was launched or captured.
      warn.accept(engine.name() + " mode unavailable (" + e.getMessage() + "); sampling in "
          + fallback.name() + " mode instead");
      return run(targets, options, fallback, null, stop, progress, started);
    }
  }

  private RecordSession.Result attempt(MultiRecord.Targets targets, SamplingOptions options,
      CaptureEngine engine, BooleanSupplier stop, RecordSession.Progress progress,
      IntConsumer started) throws SamplingException, CaptureEngine.EngineException {
    boolean single = single(targets);
    if (single && !targets.pids().isEmpty()) {
      checkAlive(targets.pids().get(0));
    }
    PipelineOptions o = options(targets, options);
    HostPipeline pipeline = new HostPipeline(proc, plugins, guard, warn, o);
    Map<Long, Part> parts = new LinkedHashMap<>();
    long startNanos = System.nanoTime();
    boolean[] byUser = {false};
    ChildProcess[] child = {null};
    Tracer[] tracer = {null};
    TargetExit[] exit = {null};
    long[] lastStatus = {startNanos};
    BooleanSupplier end = () -> {
      if (stop.getAsBoolean()) {
        byUser[0] = true;
        return true;
      }
      long now = System.nanoTime();
      if (now - lastStatus[0] >= 1_000_000_000L) {
        lastStatus[0] = now;
        PipelineStats s = pipeline.stats();
        progress.update(s.samples(), s.errors().values().stream().mapToLong(v -> v).sum(),
            s.losses().values().stream().mapToLong(v -> v).sum(), (now - startNanos) / 1e9);
      }
      if (exit[0] != null) {
        return exit[0].gone();
      }
      return pipeline.selectedRunning() == 0;
    };
    try {
      pipeline.run(engine, stream == null ? WHOLE_RUN : stream.interval(),
          options.durationNanos(), end, (batch, stats, last) -> take(batch, stats, last, single,
              parts), select -> {
            if (targets.command().isEmpty()) {
              return;
            }
            child[0] = ChildLaunch.startStopped(targets.command(), launchAs);
            tracer[0] = startTracer(child[0]);
            ChildLaunch.runToExec(child[0], tracer[0], targets.command());
            select.accept(child[0].pid());
            started.accept(child[0].pid());
            try {
              tracer[0].detach(child[0].pid(), 0);
            } catch (SyscallException e) {
              throw new SamplingException("cannot release " + targets.command().get(0) + ": "
                  + e.getMessage());
            }
            exit[0] = TargetExit.ofChild(child[0]);
          });
      RecordSession.Result result = join(new ArrayList<>(parts.values()), pipeline.stats(),
          options, byUser[0], single);
      if (child[0] == null) {
        return result;
      }
      RecordSession.Result ended = exit[0] != null && exit[0].status() != null
          ? new RecordSession.Result(result.recording(), result.summary(), exit[0].status(),
              result.stoppedByUser(), true)
          : ChildLaunch.endChild(child[0], result);
      return new RecordSession.Result(ended.recording(), ended.summary(), ended.targetExit(),
          ended.stoppedByUser(), ended.targetGone(), ended.killedAtEnd(), result.processes());
    } finally {
      if (tracer[0] != null) {
        tracer[0].close();
      }
      if (child[0] != null) {
        child[0].close();
      }
    }
  }

  /** One interval: streamed, and kept for the end (its samples only if a local file wants them). */
  private void take(List<ProcessProfile> batch, PipelineStats stats,
      boolean last, boolean single, Map<Long, Part> parts) {
    for (ProcessProfile p : batch) {
      parts.computeIfAbsent(p.serial(), k -> new Part()).add(p, stream == null
          || stream.retain());
    }
    if (stream == null || batch.isEmpty() && (!last || parts.isEmpty())) {
      return;
    }
    Recording interval;
    if (batch.isEmpty()) {
      // Every process is gone: the last call still comes, with no sample.
      Recording any = parts.values().iterator().next().first;
      long end = parts.values().stream().mapToLong(p -> p.endEpochNanos).max().orElse(0);
      interval = new Recording(any.target(), end, Math.max(end, System.currentTimeMillis()
          * 1_000_000L), any.periodNanos(), any.mode(), List.of(), List.of(), Map.of());
    } else {
      interval = RecordingMerger.merge(batch.stream().map(ProcessProfile::recording).toList(),
          !single);
    }
    // The figures the final summary will have (join): each process's, then the run's own.
    Map<String, Long> losses = new LinkedHashMap<>();
    Map<String, Long> errors = new LinkedHashMap<>();
    long samples = 0;
    for (Part p : parts.values()) {
      p.figures.losses().forEach((k, v) -> losses.merge(k, v, Long::sum));
      p.figures.errors().forEach((k, v) -> errors.merge(k, v, Long::sum));
      samples += p.figures.samples();
    }
    stats.runLosses().forEach((k, v) -> losses.merge(k, v, Long::sum));
    stats.figures().forEach((k, v) -> losses.merge(k, v, Long::sum));
    stream.listener().interval(interval, new IntervalListener.Totals(samples, losses, errors),
        last);
  }

  private static Tracer startTracer(ChildProcess child) throws SamplingException {
    try {
      return Tracer.start(child.pid());
    } catch (RuntimeException e) {
      throw new SamplingException("cannot trace the launched command: " + e.getMessage());
    }
  }

  /** A process chosen by pid must be there, and not a zombie, when the record starts. */
  private void checkAlive(int pid) throws SamplingException {
    try {
      proc.forPid(pid).status(); // says "no such process" in the reader's words
    } catch (ProcReadException e) {
      throw new SamplingException(e.getMessage());
    }
    if (TargetExit.exited(proc, pid)) {
      throw new SamplingException("process " + pid + " is a zombie: it has exited and only"
          + " waits for its parent to collect it");
    }
  }

  /**
   * One recording of every process's samples: a single process's as it is, several each under
   * its own root (RecordingMerger).
   */
  private RecordSession.Result join(List<Part> parts, PipelineStats stats,
      SamplingOptions options, boolean byUser, boolean single) throws SamplingException {
    if (parts.isEmpty()) {
      throw new SamplingException(single ? "no sample of the process: it exited at once or"
          + " could not be read" : "no sample of the selected processes: they exited at once"
          + " or never ran");
    }
    List<RecordSession.Result> results = new ArrayList<>();
    for (Part p : parts) {
      results.add(p.result(byUser));
    }
    // The pipeline's own losses and the capture's kernel figures are the run's, not a process's.
    Map<String, Long> run = new LinkedHashMap<>(stats.runLosses());
    stats.figures().forEach((k, v) -> run.merge(k, v, Long::sum));
    return RecordingMerger.join(results, run, options.periodNanos(), results.get(0), byUser,
        !single);
  }

  /** One description of a process over the run's intervals. */
  private static final class Part {
    private Recording first;
    private long endEpochNanos;
    private final Map<String, ModuleInfo> modules = new LinkedHashMap<>();
    private final List<Sample> samples = new ArrayList<>();
    private ProcessFigures figures;

    void add(ProcessProfile p, boolean keepSamples) {
      Recording r = p.recording();
      if (first == null) {
        first = r;
      }
      endEpochNanos = Math.max(endEpochNanos, r.endEpochNanos());
      for (ModuleInfo m : r.modules()) {
        modules.put(m.path() + "@" + Long.toHexString(m.start()), m);
      }
      if (keepSamples) {
        samples.addAll(r.samples());
      }
      figures = p.figures(); // cumulative
    }

    RecordSession.Result result(boolean byUser) {
      ProcessFigures f = figures;
      long start = first.startEpochNanos();
      double seconds = Math.max(1e-9, (endEpochNanos - start) / 1e9);
      RecordSession.Summary summary = new RecordSession.Summary(f.samples(), f.periods(),
          f.threads(), f.errors(), f.losses(), 0, 0, 0, 0, 0,
          f.threads() == 0 ? 0 : f.samples() / seconds / f.threads());
      Recording r = new Recording(first.target(), start, Math.max(start, endEpochNanos),
          first.periodNanos(), first.mode(), new ArrayList<>(modules.values()), samples,
          f.losses());
      return new RecordSession.Result(r, summary, null, byUser, f.exited());
    }
  }
}
