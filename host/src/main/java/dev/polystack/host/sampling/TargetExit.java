package dev.polystack.host.sampling;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.proc.TaskStat;
import dev.polystack.host.proc.ThreadState;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.SyscallException;
import java.util.List;

/**
 * Tells a loop that never traces its target (perf sampling, the perf probe backend) when the
 * target is gone. Polled, not blocking: the loop asks a few times per second. A process that is
 * gone stays gone: another process that later gets its pid is never taken for it
 * (docs/reliability.md, "Root safety: other users' processes").
 */
public interface TargetExit extends AutoCloseable {

  /** True once the process has exited. */
  boolean gone();

  /** Its wait status, when we can know it (our own child), else null. */
  WaitStatus status();

  /** Lets go of what watching needed (a pidfd); nothing by default. */
  @Override
  default void close() {}

  /**
   * A child we launched: waitpid(pid, WNOHANG) reaps it and yields the exit code. Safe because
   * the child came from posix_spawn, not ProcessBuilder, so no JVM reaper thread competes for
   * it, and it is no longer traced, so its tracer does not receive the report instead. Its pid
   * cannot pass to another process before we reap it.
   */
  static TargetExit ofChild(ChildProcess child) {
    return new TargetExit() {
      private WaitStatus status;
      private boolean gone;

      @Override
      public boolean gone() {
        if (!gone) {
          try {
            status = child.poll().orElse(null);
            gone = status != null;
          } catch (SyscallException e) {
            gone = true; // ECHILD: reaped elsewhere; its status is lost, but it is gone
          }
        }
        return gone;
      }

      @Override
      public WaitStatus status() {
        return status;
      }
    };
  }

  /**
   * Any process, from /proc: the process that has {@code pid} now (its {@link ProcessIdentity}),
   * gone when /proc no longer shows that same process, or when every thread is a zombie (it
   * exited and waits for its parent). A leader that called pthread_exit is a zombie too, but its
   * live threads keep the process here. Needs no closing; {@link #watch} notices an exit
   * through the kernel instead.
   */
  static TargetExit ofProc(ProcFs proc, int pid) {
    ProcessIdentity identity = ProcessIdentity.read(proc, pid).orElse(null);
    return new TargetExit() {
      private boolean gone = identity == null;

      @Override
      public boolean gone() {
        if (!gone) {
          gone = !identity.isCurrent(proc) || exited(proc, pid);
        }
        return gone;
      }

      @Override
      public WaitStatus status() {
        return null;
      }
    };
  }

  /**
   * Any process, watched through a pidfd (Linux 5.3+), which refers to the process itself and
   * never to a later holder of its pid; where pidfd_open is missing, as {@link #ofProc}. Close
   * it when the session ends.
   *
   * @param expected the process meant (from a selection made earlier), or null: whichever
   *     process has {@code pid} now
   * @throws SamplingException when the process meant is not (or no longer) the one with the pid
   */
  static TargetExit watch(ProcFs proc, int pid, ProcessIdentity expected)
      throws SamplingException {
    return PidfdExit.open(proc, pid, expected);
  }

  /** True when the process is gone from /proc or every thread of it is a zombie. */
  static boolean exited(ProcFs proc, int pid) {
    try {
      List<TaskStat> tasks = proc.forPid(pid).taskStats();
      for (TaskStat t : tasks) {
        ThreadState s = t.state();
        if (s != ThreadState.ZOMBIE && s != ThreadState.DEAD && s != ThreadState.DEAD_LEGACY) {
          return false;
        }
      }
      return true;
    } catch (ProcReadException e) {
      return true;
    }
  }
}
