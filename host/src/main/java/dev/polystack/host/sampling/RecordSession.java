package dev.polystack.host.sampling;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessView;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sampling.nostop.CaptureSource;
import dev.polystack.host.sampling.ptrace.PtraceSampler;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.model.Recording;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.IntConsumer;

/**
 * One {@code record} run: attach to (or launch) the target, sample it until the duration ends,
 * the user stops it or it exits, always detach, and assemble the {@link Recording}. The ptrace
 * backend is orchestrated here; the bpf and perf backends in {@link NoStopSession}.
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
  private final PluginGuard guard;
  private final SamplingRun run;
  private final NoStopSession noStop;
  private Credentials launchAs;
  private CaptureSource sharedCapture;

  public RecordSession(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn) {
    this.proc = proc;
    this.guard = guard;
    this.run = new SamplingRun(proc, plugins, guard, warn);
    this.noStop = new NoStopSession(proc, run, guard, warn);
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

  /** In bpf mode, takes the ticks from {@code source} (a share of one capture) instead of its own. */
  RecordSession sharing(CaptureSource source) {
    this.sharedCapture = source;
    return this;
  }

  /** Checks that {@code pid} can be attached to; the message says why not and what to do. */
  public void checkAttachable(int pid) throws SamplingException {
    ProcessView view = proc.forPid(pid);
    try {
      var status = view.status();
      if (status.tracerPid() != 0) {
        throw new SamplingException("process " + pid + " is already traced by process "
            + status.tracerPid() + " (a debugger or another profiler); detach it first");
      }
      if (status.state() == dev.polystack.host.proc.ThreadState.ZOMBIE) {
        throw new SamplingException("process " + pid + " is a zombie: it has exited and only"
            + " waits for its parent to collect it");
      }
    } catch (ProcReadException e) {
      throw new SamplingException(e.getMessage());
    }
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
    if (backend.mode() != Mode.PTRACE) {
      return noStop.attach(pid, backend, options, stop, progress, sharedCapture);
    }
    checkAttachable(pid);
    try (Tracer tracer = Tracer.start(pid)) {
      return ptrace(pid, tracer, options, stop, progress, false);
    }
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
   * program's pid to {@code started} while it stands in its exec (see the ptrace overload).
   */
  public Result launch(List<String> command, Backend backend, SamplingOptions options,
      BooleanSupplier stop, Progress progress, IntConsumer started) throws SamplingException {
    if (backend.mode() != Mode.PTRACE) {
      return noStop.launch(command, launchAs, backend, options, stop, progress, started,
          sharedCapture);
    }
    return launch(command, options, stop, progress, started);
  }

  /**
   * Launches {@code command} under the ptrace backend and hands its pid to {@code started} once
   * it stands in its exec, before it runs a single instruction of the program: the moment
   * another session that needs the program's own memory map (a vDSO probe session) can join.
   */
  public Result launch(List<String> command, SamplingOptions options, BooleanSupplier stop,
      Progress progress, IntConsumer started) throws SamplingException {
    ChildProcess child = startStopped(command, launchAs);
    try (child; Tracer tracer = Tracer.start(child.pid())) {
      runToExec(child, tracer, command);
      started.accept(child.pid());
      // The program stops in its exec: the sampling loop resumes it once everything is set up,
      // so that no part of it runs unsampled.
      Result r = ptrace(child.pid(), tracer, options, stop, progress, true);
      if (r.targetExit() != null) {
        return r;
      }
      tracer.close(); // every thread detached first: the child's end is ours to collect now
      return endChild(child, r);
    }
  }

  /**
   * The run ended first (duration, Ctrl-C): the launched program does not outlive its
   * recording. It is killed and reaped, and the result says so.
   */
  static Result endChild(ChildProcess child, Result r) {
    ChildProcess.Ending end = child.end();
    return new Result(r.recording(), r.summary(), end.status(), r.stoppedByUser(),
        end.status() != null || r.targetGone(), end.killedByUs());
  }

  /**
   * Starts {@code command} stopped before its exec (see {@link Launcher#startStopped}), as
   * {@code as} (null: polystack's user), to be killed if polystack dies: called on the
   * command's thread, which outlives the child (see {@link Launcher#killedWithPolystack}).
   */
  static ChildProcess startStopped(List<String> command, Credentials as)
      throws SamplingException {
    try {
      Launcher launcher = Launcher.command(command).startStopped(true).killedWithPolystack();
      return (as == null ? launcher : launcher.runAs(as)).start();
    } catch (SyscallException e) {
      throw new SamplingException("cannot start " + command.get(0) + ": " + e.getMessage());
    }
  }

  /** Seizes the stopped child and lets it run to the PTRACE_EVENT_EXEC stop of the program. */
  static void runToExec(ChildProcess child, Tracer tracer, List<String> command)
      throws SamplingException {
    try {
      child.seizeAndRunToExec(tracer, PtraceSampler.OPTIONS, Duration.ofSeconds(10));
    } catch (SyscallException | TimeoutException e) {
      throw new SamplingException("cannot run " + command.get(0) + ": " + e.getMessage());
    }
  }

  private Result ptrace(int pid, Tracer tracer, SamplingOptions options, BooleanSupplier stop,
      Progress progress, boolean alreadySeized) throws SamplingException {
    return run.run(pid, Mode.PTRACE.id(), options, progress, (target, processor, refresh) -> {
      PtraceSampler sampler = new PtraceSampler(target, options,
          new StackWalker(options.maxDepth(), guard), processor, proc, refresh);
      return sampler.run(tracer, stop, alreadySeized);
    });
  }
}
