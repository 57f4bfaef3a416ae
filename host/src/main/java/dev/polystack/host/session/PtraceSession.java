package dev.polystack.host.session;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.proc.ThreadState;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.ptrace.PtraceSampler;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.IntConsumer;

/**
 * A {@code record --mode ptrace} run: the target is seized and each sampled thread stopped for
 * the moment its stack is read ({@link PtraceSampler}). Every ptrace request comes from one
 * tracer thread, which the sampling loop runs on; on every way out all threads are detached.
 * With {@code expected}, the pid must still name that process when the session starts.
 */
record PtraceSession(ProcFs proc, SamplingRun run, PluginGuard guard, ProcessIdentity expected)
    implements BackendSession {

  @Override
  public RecordSession.Result attach(int pid, SamplingOptions options, BooleanSupplier stop,
      RecordSession.Progress progress) throws SamplingException {
    checkAttachable(proc, pid);
    if (expected != null && !expected.isCurrent(proc)) {
      throw new SamplingException("process " + pid + " exited before it was attached (its pid"
          + " now names another process, or none)");
    }
    try (Tracer tracer = Tracer.start(pid)) {
      return sample(pid, tracer, options, stop, progress, false);
    }
  }

  @Override
  public RecordSession.Result launch(List<String> command, Credentials as,
      SamplingOptions options, BooleanSupplier stop, RecordSession.Progress progress,
      IntConsumer started) throws SamplingException {
    ChildProcess child = ChildLaunch.startStopped(command, as);
    try (child; Tracer tracer = Tracer.start(child.pid())) {
      ChildLaunch.runToExec(child, tracer, command);
      started.accept(child.pid());
      // The program stops in its exec: the sampling loop resumes it once everything is set up,
      // so that no part of it runs unsampled.
      RecordSession.Result r = sample(child.pid(), tracer, options, stop, progress, true);
      if (r.targetExit() != null) {
        return r;
      }
      tracer.close(); // every thread detached first: the child's end is ours to collect now
      return ChildLaunch.endChild(child, r);
    }
  }

  /**
   * Checks that {@code pid} can be seized (dump and snapshot seize it too); the message says
   * why not and what to do.
   */
  static void checkAttachable(ProcFs proc, int pid) throws SamplingException {
    try {
      var status = proc.forPid(pid).status();
      if (status.tracerPid() != 0) {
        throw new SamplingException("process " + pid + " is already traced by process "
            + status.tracerPid() + " (a debugger or another profiler); detach it first");
      }
      if (status.state() == ThreadState.ZOMBIE) {
        throw new SamplingException("process " + pid + " is a zombie: it has exited and only"
            + " waits for its parent to collect it");
      }
    } catch (ProcReadException e) {
      throw new SamplingException(e.getMessage());
    }
  }

  private RecordSession.Result sample(int pid, Tracer tracer, SamplingOptions options,
      BooleanSupplier stop, RecordSession.Progress progress, boolean heldAtExec)
      throws SamplingException {
    return run.run(pid, RecordSession.Mode.PTRACE.id(), options, progress,
        (target, processor, refresh) -> {
          PtraceSampler sampler = new PtraceSampler(target, options,
              new StackWalker(options.maxDepth(), guard), processor, proc, refresh);
          return sampler.run(tracer, stop, heldAtExec);
        });
  }
}
