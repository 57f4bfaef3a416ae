package dev.polystack.host.sampling;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.TaskStat;
import dev.polystack.host.proc.ThreadState;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.SyscallException;
import java.util.List;

/**
 * Tells a loop that never traces its target (perf sampling, the perf probe backend) when the
 * target is gone. Polled, not blocking: the loop asks a few times per second.
 */
public interface TargetExit {

  /** True once the process has exited. */
  boolean gone();

  /** Its wait status, when we can know it (our own child), else null. */
  WaitStatus status();

  /**
   * A child we launched: waitpid(pid, WNOHANG) reaps it and yields the exit code. Safe because
   * the child came from posix_spawn, not ProcessBuilder, so no JVM reaper thread competes for
   * it, and it is no longer traced, so its tracer does not receive the report instead.
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
   * Any process, from /proc: gone when its directory is, or when every thread is a zombie (it
   * exited and waits for its parent). A leader that called pthread_exit is a zombie too, but its
   * live threads keep the process here.
   */
  static TargetExit ofProc(ProcFs proc, int pid) {
    return new TargetExit() {
      private boolean gone;

      @Override
      public boolean gone() {
        if (!gone) {
          gone = !alive(proc, pid);
        }
        return gone;
      }

      @Override
      public WaitStatus status() {
        return null;
      }
    };
  }

  private static boolean alive(ProcFs proc, int pid) {
    try {
      List<TaskStat> tasks = proc.forPid(pid).taskStats();
      for (TaskStat t : tasks) {
        ThreadState s = t.state();
        if (s != ThreadState.ZOMBIE && s != ThreadState.DEAD && s != ThreadState.DEAD_LEGACY) {
          return true;
        }
      }
      return false;
    } catch (ProcReadException e) {
      return false;
    }
  }
}
