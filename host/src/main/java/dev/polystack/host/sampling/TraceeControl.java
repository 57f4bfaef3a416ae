package dev.polystack.host.sampling;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.ptrace.Ptrace;
import dev.polystack.host.ptrace.PtraceConstants;
import dev.polystack.host.ptrace.TraceEvent;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The part of tracing every ptrace-based command shares: seizing all threads of a process,
 * passing every event on so the target behaves as if untraced, and letting go of it. Used on the
 * tracer thread only.
 */
final class TraceeControl {
  static final int OPTIONS = PtraceConstants.O_TRACECLONE | PtraceConstants.O_TRACEEXEC;
  static final long DETACH_TIMEOUT_NANOS = 1_000_000_000L;

  private final int pid;
  private final Runnable onExec;
  private WaitStatus exit;

  /** @param onExec told when the process execs (its modules change); must not block */
  TraceeControl(int pid, Runnable onExec) {
    this.pid = pid;
    this.onExec = onExec;
  }

  /** The leader's exit status once the whole process is gone, else null. */
  WaitStatus exit() {
    return exit;
  }

  boolean gone(Ptrace p) {
    return exit != null || !p.tracesAny();
  }

  /**
   * Seizes every thread, re-listing /proc/PID/task until no new thread appears (threads created
   * by an already seized thread are attached by the kernel through TRACECLONE).
   */
  void seizeAll(Ptrace p) throws SyscallException {
    for (int round = 0; round < 100; round++) {
      drain(p);
      Set<Integer> traced = p.tracedThreads();
      List<Integer> fresh = new ArrayList<>();
      for (int tid : ProcFs.system().forPid(pid).taskIdsOrEmpty()) {
        if (!traced.contains(tid)) {
          fresh.add(tid);
        }
      }
      if (fresh.isEmpty()) {
        if (traced.isEmpty()) {
          throw new SyscallException("ptrace(SEIZE, " + pid + ")", Errno.ESRCH,
              SyscallException.Area.PTRACE);
        }
        return;
      }
      for (int tid : fresh) {
        try {
          p.seize(tid, OPTIONS);
        } catch (SyscallException e) {
          // ESRCH: gone since listed. EPERM on a thread (not the process itself): attached by
          // the kernel through a clone event we have not reaped yet.
          boolean leader = tid == pid;
          if (!(e.errno() == Errno.ESRCH || e.errno() == Errno.EPERM && !leader)) {
            throw e;
          }
        }
      }
    }
  }

  /** Reaps and passes on every pending event. */
  void drain(Ptrace p) throws SyscallException {
    p.reapAll();
    TraceEvent e;
    while ((e = p.nextEvent()) != null) {
      handle(p, e);
    }
  }

  /** Passes an event on so that the target sees exactly what it would see untraced. */
  void handle(Ptrace p, TraceEvent e) throws SyscallException {
    WaitStatus st = e.status();
    int tid = e.tid();
    if (st.terminated()) {
      if (tid == pid) {
        exit = st; // the leader reports last, once the whole thread group is gone
      }
      return;
    }
    if (!st.stopped()) {
      return;
    }
    int event = st.ptraceEvent();
    if (event == PtraceConstants.EVENT_STOP) {
      if (st.groupStop()) {
        listen(p, tid); // job control: stay stopped until SIGCONT, without us holding it
      } else {
        resume(p, tid, 0);
      }
    } else if (event != 0) {
      if (event == PtraceConstants.EVENT_EXEC) {
        onExec.run();
      }
      resume(p, tid, 0);
    } else {
      // A signal-delivery stop: our INTERRUPT never causes one (it stops with EVENT_STOP), so
      // the signal is the target's own and is delivered unchanged, SIGTRAP and SIGSTOP included.
      resume(p, tid, st.stopSignal());
    }
  }

  static boolean isInterruptStop(WaitStatus st) {
    return st.stopped() && st.ptraceEvent() == PtraceConstants.EVENT_STOP && !st.groupStop();
  }

  void resume(Ptrace p, int tid, int signal) throws SyscallException {
    try {
      p.cont(tid, signal);
    } catch (SyscallException e) {
      if (e.errno() != Errno.ESRCH) {
        throw e;
      }
    }
  }

  private void listen(Ptrace p, int tid) throws SyscallException {
    try {
      p.listen(tid);
    } catch (SyscallException e) {
      if (e.errno() != Errno.ESRCH) {
        throw e;
      }
    }
  }

  /** Detaches every thread; returns how many could not be detached. */
  int detachAll(Ptrace p) {
    int failed = 0;
    for (int tid : p.tracedThreads()) {
      try {
        if (!p.detachSafely(tid, DETACH_TIMEOUT_NANOS)) {
          failed++;
        }
      } catch (SyscallException e) {
        failed++;
      }
    }
    return failed;
  }
}
