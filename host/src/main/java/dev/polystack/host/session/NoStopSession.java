package dev.polystack.host.session;

import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sampling.nostop.BpfSampler;
import dev.polystack.host.sampling.nostop.NoStopSampler;
import dev.polystack.host.sampling.nostop.PerfSampler;
import dev.polystack.host.sys.SyscallException;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.IntConsumer;

/**
 * A {@code record --mode bpf} or {@code --mode perf} run. The target is never stopped by us: an
 * attached process is neither traced nor interrupted; a launched one is traced only from its
 * start to the exec of the program, so the events exist before its first instruction.
 *
 * <p>bpf mode falls back to perf mode, with one line saying why, when the capture program cannot
 * be loaded and the user did not ask for bpf by name.
 *
 * <p>Launch mode detaches at that exec rather than keeping a tracer to collect the exit: a
 * tracee, even one never interrupted, stops for every signal, clone and exec until its tracer
 * resumes it, which is exactly what perf mode promises not to do, and it shows a TracerPid that
 * makes debuggers refuse to attach. The exit status is collected instead with waitpid on the
 * child (see {@link TargetExit#ofChild}). Threads the program creates are found by re-listing
 * /proc/PID/task, as in attach mode.
 *
 * @param expected the process meant, when it was chosen earlier (a subprocess found in /proc);
 *     null: whichever process has the pid when the session starts
 */
record NoStopSession(ProcFs proc, SamplingRun run, PluginGuard guard, Consumer<String> warn,
    RecordSession.Backend backend, ProcessIdentity expected)
    implements BackendSession {

  /** What to do once the events are open and the reader is ready. */
  private interface Release {
    void run() throws SyscallException;
  }

  @Override
  public RecordSession.Result attach(int pid, SamplingOptions options, BooleanSupplier stop,
      RecordSession.Progress progress) throws SamplingException {
    checkAlive(pid);
    // The pidfd is opened before anything is attached, and the process it names checked: the
    // session samples that process and ends when it exits, whoever gets its pid next.
    try (TargetExit exit = TargetExit.watch(proc, pid, expected)) {
      try (TickCapture capture = openCapture(options)) {
        return sample(pid, capture, options, stop, progress, () -> {}, exit);
      }
    }
  }

  @Override
  public RecordSession.Result launch(List<String> command, Credentials as,
      SamplingOptions options, BooleanSupplier stop, RecordSession.Progress progress,
      IntConsumer started) throws SamplingException {
    // Loaded before the program starts: a refusal falls back before anything ran.
    try (TickCapture capture = openCapture(options)) {
      ChildProcess child = ChildLaunch.startStopped(command, as);
      try (child; Tracer tracer = Tracer.start(child.pid())) {
        ChildLaunch.runToExec(child, tracer, command);
        int pid = child.pid();
        started.accept(pid);
        RecordSession.Result result = sample(pid, capture, options, stop, progress,
            () -> tracer.detach(pid, 0), TargetExit.ofChild(child));
        return result.targetExit() != null ? result : ChildLaunch.endChild(child, result);
      }
    }
  }

  /** The tick capture for bpf mode, or null for perf mode (also when bpf mode falls back). */
  private TickCapture openCapture(SamplingOptions options) throws SamplingException {
    if (backend.mode() != RecordSession.Mode.BPF) {
      return null;
    }
    return BpfSampler.openCapture(options.rateHz(), backend.fallback(), warn);
  }

  private RecordSession.Result sample(int pid, TickCapture capture, SamplingOptions options,
      BooleanSupplier stop, RecordSession.Progress progress, Release release, TargetExit exit)
      throws SamplingException {
    RecordSession.Mode mode = capture != null ? RecordSession.Mode.BPF : RecordSession.Mode.PERF;
    return run.run(pid, mode.id(), options, progress,
        (target, processor, refresh) -> {
          StackWalker walker = new StackWalker(options.maxDepth(), guard);
          try (NoStopSampler sampler = capture != null
              ? new BpfSampler(target, options, walker, processor, refresh, guard, capture)
              : new PerfSampler(target, options, walker, processor, refresh, warn)) {
            sampler.openAll();
            sampler.placeBeforeStart(proc);
            release.run();
            return sampler.run(stop, exit);
          }
        });
  }

  /** perf needs no tracer slot, so a traced process is fine; an exited one is not. */
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
}
