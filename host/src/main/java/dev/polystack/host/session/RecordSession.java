package dev.polystack.host.session;

import dev.polystack.host.launch.Credentials;
import dev.polystack.host.pipeline.CaptureEngine;
import dev.polystack.host.pipeline.HostPipeline;
import dev.polystack.host.pipeline.PipelineOptions;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.otel.model.Recording;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.IntConsumer;

/**
 * One {@code record} run: attach to (or launch) the target, sample it until the duration ends,
 * the user stops it or it exits, always detach, and assemble the {@link Recording}. It chooses
 * the backend: ptrace mode attaches and launches with {@link PtraceSession}; bpf and perf modes
 * are selections over the host-wide pipeline ({@link PipelineRecord}), for one process or
 * several.
 */
public final class RecordSession {

  /** The sampling backend. */
  public enum Mode {
    /** Capture each tick in the kernel (eBPF): consistent stacks, no stop. */
    BPF,
    /** Stop each sampled thread briefly: consistent stacks, a pause per sample. */
    PTRACE,
    /** perf_event cpu-clock samples with a stack copy: the target never stops. */
    PERF;

    /** The name used on the command line and in the {@link Recording}. */
    public String id() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** Parses {@code bpf}, {@code ptrace} or {@code perf}; IllegalArgumentException otherwise. */
    public static Mode parse(String text) {
      for (Mode m : values()) {
        if (m.id().equals(text)) {
          return m;
        }
      }
      throw new IllegalArgumentException("--mode " + text + ": expected bpf, ptrace or perf");
    }
  }

  /**
   * The backend to sample with.
   *
   * @param fallback whether perf mode may stand in when bpf mode cannot load (the default mode,
   *     not one the user named)
   */
  public record Backend(Mode mode, boolean fallback) {
    public Backend {
      java.util.Objects.requireNonNull(mode, "mode");
    }

    /** The default: bpf where it loads, else perf. */
    public static Backend defaultBackend() {
      return new Backend(Mode.BPF, true);
    }

    /** Exactly {@code mode}, as the user asked. */
    public static Backend exactly(Mode mode) {
      return new Backend(mode, false);
    }
  }

  /**
   * What a run produced, for the summary and the exit code.
   *
   * @param targetExit the target's wait status when it could be collected, else null
   * @param targetGone the target exited during the run (its status may still be unknown: a
   *     process attached in perf mode is neither our child nor our tracee)
   * @param killedAtEnd a launched target was still running when the run ended, and polystack
   *     killed it (SIGKILL): a launched program does not outlive its recording
   * @param processes each process of a record of several, in the order they were found; empty
   *     for a record of one
   */
  public record Result(Recording recording, Summary summary, WaitStatus targetExit,
      boolean stoppedByUser, boolean targetGone, boolean killedAtEnd,
      List<ProcessPart> processes) {
    public Result {
      processes = List.copyOf(processes);
    }

    public Result(Recording recording, Summary summary, WaitStatus targetExit,
        boolean stoppedByUser, boolean targetGone, boolean killedAtEnd) {
      this(recording, summary, targetExit, stoppedByUser, targetGone, killedAtEnd, List.of());
    }

    public Result(Recording recording, Summary summary, WaitStatus targetExit,
        boolean stoppedByUser, boolean targetGone) {
      this(recording, summary, targetExit, stoppedByUser, targetGone, false);
    }
  }

  /**
   * One process of a record of several ({@link MultiRecord}): its samples and its own losses.
   *
   * @param exited it exited during the run
   */
  public record ProcessPart(int pid, String name, long samples, Map<String, Long> losses,
      boolean exited) {
    public ProcessPart {
      losses = Map.copyOf(losses);
    }
  }

  /**
   * Figures for the end-of-run summary. The target pause per sample runs from the interrupt to
   * the resume; the median and p99 come from a bounded reservoir, the mean and count are exact.
   */
  public record Summary(long samples, long periods, int threads, Map<String, Long> errors,
      Map<String, Long> losses, long pauseCount, long meanPauseNanos, long medianPauseNanos,
      long p99PauseNanos, long maxPauseNanos, double achievedHz) {}

  /** Live figures for the status line. */
  public interface Progress {
    void update(long samples, long errors, long lost, double elapsedSeconds);
  }

  private final ProcFs proc;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;
  private final SamplingRun run;
  private Credentials launchAs;
  private ProcessIdentity expected;
  private PipelineRecord.Stream stream;

  public RecordSession(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn) {
    this.proc = proc;
    this.plugins = plugins;
    this.guard = guard;
    this.warn = warn;
    this.run = new SamplingRun(proc, plugins, guard, warn);
  }

  /**
   * Streams the samples of every {@code interval} to {@code listener} while runs go on (the
   * OTLP export). With {@code retainSamples} the full recording is still returned at the end
   * (for a local file); without, samples are let go once streamed, so a long run's memory stays
   * flat, and the returned recording has none (its summary still counts them).
   */
  public RecordSession stream(Duration interval, IntervalListener listener,
      boolean retainSamples) {
    run.stream(interval, listener, retainSamples);
    stream = new PipelineRecord.Stream(interval, listener, retainSamples);
    return this;
  }

  /**
   * Launched commands run as {@code as} instead of polystack's own user (the CLI's --user, or
   * the user who ran sudo); null: polystack's user.
   */
  public RecordSession launchAs(Credentials as) {
    this.launchAs = as;
    return this;
  }

  /**
   * Attaches only to {@code identity}: if its pid names another process by then, the attach
   * fails (bpf and perf modes check it again once their pidfd is open; ptrace mode before it
   * seizes, and then follows its tracee's own exit).
   */
  RecordSession expecting(ProcessIdentity identity) {
    this.expected = identity;
    return this;
  }

  /** Samples the running process {@code pid} with the ptrace backend. */
  public Result attach(int pid, SamplingOptions options, BooleanSupplier stop, Progress progress)
      throws SamplingException {
    return attach(pid, Mode.PTRACE, options, stop, progress);
  }

  /** Samples the running process {@code pid} with exactly {@code mode}. */
  public Result attach(int pid, Mode mode, SamplingOptions options, BooleanSupplier stop,
      Progress progress) throws SamplingException {
    return attach(pid, Backend.exactly(mode), options, stop, progress);
  }

  /** Samples the running process {@code pid}; in bpf and perf modes it is never stopped. */
  public Result attach(int pid, Backend backend, SamplingOptions options, BooleanSupplier stop,
      Progress progress) throws SamplingException {
    return session(backend).attach(pid, options, stop, progress);
  }

  /** Launches {@code command} with inherited stdio under the ptrace backend. */
  public Result launch(List<String> command, SamplingOptions options, BooleanSupplier stop,
      Progress progress) throws SamplingException {
    return launch(command, Mode.PTRACE, options, stop, progress);
  }

  /** Launches {@code command} with inherited stdio, sampled from its first instruction. */
  public Result launch(List<String> command, Mode mode, SamplingOptions options,
      BooleanSupplier stop, Progress progress) throws SamplingException {
    return launch(command, Backend.exactly(mode), options, stop, progress);
  }

  /** Launches {@code command} with inherited stdio, sampled from its first instruction. */
  public Result launch(List<String> command, Backend backend, SamplingOptions options,
      BooleanSupplier stop, Progress progress) throws SamplingException {
    return launch(command, backend, options, stop, progress, pid -> { });
  }

  /**
   * {@link #launch(List, Backend, SamplingOptions, BooleanSupplier, Progress)} that hands the
   * program's pid to {@code started} once it stands in its exec, before it runs a single
   * instruction of the program: the moment another session that needs the program's own memory
   * map (a vDSO probe session) can join.
   */
  public Result launch(List<String> command, Backend backend, SamplingOptions options,
      BooleanSupplier stop, Progress progress, IntConsumer started) throws SamplingException {
    return session(backend).launch(command, launchAs, options, stop, progress, started);
  }

  /**
   * {@link #launch(List, Backend, SamplingOptions, BooleanSupplier, Progress, IntConsumer)}
   * under the ptrace backend.
   */
  public Result launch(List<String> command, SamplingOptions options, BooleanSupplier stop,
      Progress progress, IntConsumer started) throws SamplingException {
    return launch(command, Backend.exactly(Mode.PTRACE), options, stop, progress, started);
  }

  /**
   * Records {@code targets} in bpf or perf mode, one process or several, until the duration,
   * {@code stop}, or their end; a launched command's pid goes to {@code started} while it
   * stands in its exec. bpf mode falls back to perf mode, with one line saying why, when the
   * capture cannot load and the user did not ask for bpf by name.
   */
  public Result record(MultiRecord.Targets targets, Backend backend, SamplingOptions options,
      BooleanSupplier stop, Progress progress, IntConsumer started) throws SamplingException {
    if (backend.mode() == Mode.PTRACE) {
      throw new IllegalArgumentException("ptrace mode records with attach or launch");
    }
    PipelineOptions o = PipelineRecord.options(targets, options);
    CaptureEngine engine = backend.mode() == Mode.BPF ? HostPipeline.bpfEngine(o)
        : HostPipeline.perfEngine(o);
    // Only bpf is checked ahead (for its fallback); perf says why at its start, which opens
    // nothing before: a perf event held by polystack means its sampling has begun.
    Optional<String> why = backend.mode() == Mode.BPF ? engine.check() : Optional.empty();
    if (why.isPresent() && backend.fallback()) {
      warn.accept("bpf mode unavailable (" + why.get() + "); sampling in perf mode instead");
      engine = HostPipeline.perfEngine(o);
    } else if (why.isPresent()) {
      throw new SamplingException("cannot sample in bpf mode: " + why.get()
          + "; use --mode perf or --mode ptrace");
    }
    // A program the kernel refuses shows only at the start: then perf mode too, if allowed.
    CaptureEngine fallback = backend.mode() == Mode.BPF && backend.fallback() && why.isEmpty()
        ? HostPipeline.perfEngine(o) : null;
    return new PipelineRecord(proc, plugins, guard, warn, launchAs, stream).run(targets,
        options, engine, fallback, stop, progress, started);
  }

  /** The backend's session: ptrace stops the target per sample, bpf and perf never do. */
  private BackendSession session(Backend backend) {
    if (backend.mode() == Mode.PTRACE) {
      return new PtraceSession(proc, run, guard, expected);
    }
    return new BackendSession() {
      @Override
      public Result attach(int pid, SamplingOptions options, BooleanSupplier stop,
          Progress progress) throws SamplingException {
        return record(new MultiRecord.Targets(List.of(pid), List.of(), false), backend, options,
            stop, progress, started -> { });
      }

      @Override
      public Result launch(List<String> command, Credentials as, SamplingOptions options,
          BooleanSupplier stop, Progress progress, IntConsumer started)
          throws SamplingException {
        return record(new MultiRecord.Targets(List.of(), command, false), backend, options,
            stop, progress, started);
      }
    };
  }
}
