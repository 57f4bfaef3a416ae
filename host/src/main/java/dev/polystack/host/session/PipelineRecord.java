package dev.polystack.host.session;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.pipeline.CaptureEngine;
import dev.polystack.host.pipeline.HostPipeline;
import dev.polystack.host.pipeline.ProcessSelection;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.model.Recording;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A bpf- or perf-mode {@code record} of several processes, or of a process and the ones it
 * creates ({@code --subprocesses}), on the host-wide pipeline: one capture, one process table,
 * one walk thread whatever the number of processes; a followed process's children are targets
 * from their fork (the kernel's fork event), so a child shorter-lived than any /proc scan is
 * still recorded. Ptrace mode records several processes with {@link MultiRecord}.
 *
 * <p>The run ends at the duration, on the user's stop, when a launched command exits, or when
 * every recorded process has exited.
 */
public final class PipelineRecord {
  private final ProcFs proc;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;
  private final Credentials launchAs;

  public PipelineRecord(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn, Credentials launchAs) {
    this.proc = proc;
    this.plugins = plugins;
    this.guard = guard;
    this.warn = warn;
    this.launchAs = launchAs;
  }

  /** The pipeline's options for a record of {@code targets}. */
  static HostPipeline.Options options(MultiRecord.Targets targets, SamplingOptions options) {
    return new HostPipeline.Options(options.rateHz(), options.stackBytes(),
        options.maxDepth(), new ProcessSelection(new HashSet<>(targets.pids()), "", null, ""),
        false, HostPipeline.Options.DEFAULT_MAX_PROCESSES, Integer.MAX_VALUE,
        targets.subprocesses(), targets.user(), true);
  }

  /**
   * Records until the duration ends, {@code stop} says so, or the targets are gone, with {@code
   * engine} (made for {@link #options}); {@link CaptureEngine#check} is the caller's.
   */
  public RecordSession.Result run(MultiRecord.Targets targets, SamplingOptions options,
      CaptureEngine engine, BooleanSupplier stop, RecordSession.Progress progress)
      throws SamplingException {
    HostPipeline.Options o = options(targets, options);
    HostPipeline pipeline = new HostPipeline(proc, plugins, guard, warn, o);
    List<HostPipeline.ProcessProfile> profiles = new ArrayList<>();
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
        HostPipeline.Stats s = pipeline.stats();
        progress.update(s.samples(), s.errors().values().stream().mapToLong(v -> v).sum(),
            s.losses().values().stream().mapToLong(v -> v).sum(), (now - startNanos) / 1e9);
      }
      if (exit[0] != null) {
        return exit[0].gone();
      }
      return pipeline.selectedRunning() == 0;
    };
    try {
      pipeline.run(engine, Duration.ofDays(365), options.durationNanos(), end,
          (batch, stats, last) -> profiles.addAll(batch), select -> {
            if (targets.command().isEmpty()) {
              return;
            }
            child[0] = ChildLaunch.startStopped(targets.command(), launchAs);
            tracer[0] = startTracer(child[0]);
            ChildLaunch.runToExec(child[0], tracer[0], targets.command());
            select.accept(child[0].pid());
            try {
              tracer[0].detach(child[0].pid(), 0);
            } catch (SyscallException e) {
              throw new SamplingException("cannot release " + targets.command().get(0) + ": "
                  + e.getMessage());
            }
            exit[0] = TargetExit.ofChild(child[0]);
          });
      RecordSession.Result result = join(profiles, pipeline.stats(), options, byUser[0]);
      if (child[0] == null) {
        return result;
      }
      RecordSession.Result ended = exit[0] != null && exit[0].status() != null
          ? new RecordSession.Result(result.recording(), result.summary(), exit[0].status(),
              result.stoppedByUser(), true)
          : ChildLaunch.endChild(child[0], result);
      return new RecordSession.Result(ended.recording(), ended.summary(), ended.targetExit(),
          ended.stoppedByUser(), ended.targetGone(), ended.killedAtEnd(), result.processes());
    } catch (CaptureEngine.EngineException e) {
      throw new SamplingException("cannot sample in " + engine.name() + " mode: "
          + e.getMessage() + (engine.name().equals("bpf") ? "; use --mode perf or --mode ptrace"
              : "; or use --mode ptrace"));
    } finally {
      if (tracer[0] != null) {
        tracer[0].close();
      }
      if (child[0] != null) {
        child[0].close();
      }
    }
  }

  private static Tracer startTracer(ChildProcess child) throws SamplingException {
    try {
      return Tracer.start(child.pid());
    } catch (RuntimeException e) {
      throw new SamplingException("cannot trace the launched command: " + e.getMessage());
    }
  }

  /** One recording of every process's samples, each under its own root (RecordingMerger). */
  private RecordSession.Result join(List<HostPipeline.ProcessProfile> profiles,
      HostPipeline.Stats stats, SamplingOptions options, boolean byUser)
      throws SamplingException {
    if (profiles.isEmpty()) {
      throw new SamplingException("no sample of the selected processes: they exited at once or"
          + " never ran");
    }
    List<RecordSession.Result> parts = new ArrayList<>();
    for (HostPipeline.ProcessProfile p : profiles) {
      Recording r = p.recording();
      HostPipeline.ProcessFigures f = p.figures();
      double seconds = Math.max(1e-9, (r.endEpochNanos() - r.startEpochNanos()) / 1e9);
      RecordSession.Summary summary = new RecordSession.Summary(f.samples(), f.periods(),
          f.threads(), f.errors(), f.losses(), 0, 0, 0, 0, 0,
          f.threads() == 0 ? 0 : f.samples() / seconds / f.threads());
      parts.add(new RecordSession.Result(new Recording(r.target(), r.startEpochNanos(),
          r.endEpochNanos(), r.periodNanos(), r.mode(), r.modules(), r.samples(), f.losses()),
          summary, null, byUser, f.exited()));
    }
    // The pipeline's own losses and the capture's kernel figures are the run's, not a process's.
    Map<String, Long> run = new LinkedHashMap<>(stats.runLosses());
    stats.figures().forEach((k, v) -> run.merge(k, v, Long::sum));
    return RecordingMerger.join(parts, run, options.periodNanos(), parts.get(0), byUser);
  }
}
