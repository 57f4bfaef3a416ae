package dev.polystack.host.session;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.ptrace.PtraceConstants;
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
    runToExec(child, tracer, command, PtraceSampler.OPTIONS);
  }

  private static void runToExec(ChildProcess child, Tracer tracer, List<String> command,
      int options) throws SamplingException {
    try {
      child.seizeAndRunToExec(tracer, options, Duration.ofSeconds(10));
    } catch (SyscallException | TimeoutException e) {
      throw new SamplingException("cannot run " + command.get(0) + ": " + e.getMessage());
    }
  }

  /** arch_prctl and its ARCH_SET_FS: the main thread's thread pointer (x86-64). */
  private static final long ARCH_PRCTL = 158;
  private static final long ARCH_SET_FS = 0x1002;

  /**
   * Seizes the stopped child and runs it to where the dynamic linker has mapped every library
   * it starts with and no code of the program's has run: the main thread setting its thread
   * pointer (glibc's ld.so after mapping the initial libraries, before relocating them and
   * running constructors; a static glibc program early in its start). Probes placed there see
   * the program's first allocations.
   */
  static void runToThreadSetup(ChildProcess child, Tracer tracer, List<String> command)
      throws SamplingException {
    runToExec(child, tracer, command, PtraceSampler.OPTIONS | PtraceConstants.O_TRACESYSGOOD);
    try {
      child.runToSyscall(tracer, ARCH_PRCTL, ARCH_SET_FS, Duration.ofSeconds(10));
    } catch (SyscallException | TimeoutException e) {
      throw new SamplingException("cannot run " + command.get(0) + " to its thread setup"
          + " (arch_prctl ARCH_SET_FS), where its allocator is probed: " + e.getMessage());
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
