package dev.polystack.host.probes;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.SyscallException;

/** Tells a backend that does not trace its target when the target is gone. Polled. */
public interface ExitCheck {
  boolean gone();

  /** The exit status when it can be known (our own child), else null. */
  default WaitStatus status() {
    return null;
  }

  /** A child we launched and no longer trace: waitpid(WNOHANG) reaps it. */
  static ExitCheck ofChild(ChildProcess child) {
    return new ExitCheck() {
      private WaitStatus status;
      private boolean gone;

      @Override
      public boolean gone() {
        if (!gone) {
          try {
            status = child.poll().orElse(null);
            gone = status != null;
          } catch (SyscallException e) {
            gone = true; // reaped elsewhere: gone, status unknown
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

  /** Any process: gone when its /proc entry is, or every thread is a zombie. */
  static ExitCheck ofProc(ProcFs proc, int pid) {
    return () -> {
      for (int tid : dev.polystack.host.ptrace.Tracer.listTasks(pid)) {
        try {
          String stat = java.nio.file.Files.readString(
              proc.root().resolve(pid + "/task/" + tid + "/stat"));
          char state = stat.charAt(stat.lastIndexOf(')') + 2);
          if (state != 'Z' && state != 'X' && state != 'x') {
            return false;
          }
        } catch (java.io.IOException | RuntimeException e) {
          // the thread went away while we looked
        }
      }
      return true;
    };
  }
}
