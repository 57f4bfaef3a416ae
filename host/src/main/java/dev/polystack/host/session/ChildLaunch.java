package dev.polystack.host.session;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.ptrace.PtraceSampler;
import dev.polystack.host.sys.SyscallException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeoutException;

/**
 * The steps of launching a command to record that every backend shares: it is traced from its
 * start to the exec of the program, so sampling can be set up before its first instruction.
 */
final class ChildLaunch {
  private ChildLaunch() {}

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

  /**
   * The run ended first (duration, Ctrl-C): the launched program does not outlive its
   * recording. It is killed and reaped, and the result says so.
   */
  static RecordSession.Result endChild(ChildProcess child, RecordSession.Result r) {
    ChildProcess.Ending end = child.end();
    return new RecordSession.Result(r.recording(), r.summary(), end.status(), r.stoppedByUser(),
        end.status() != null || r.targetGone(), end.killedByUs());
  }
}
