package dev.polystack.host.ptrace;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.Syscalls;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The part of tracing every ptrace-based command shares: seizing all threads of a process,
 * passing every event on so the target behaves as if untraced, and letting go of it. What a
 * command adds (arming breakpoints, following a new process, taking its own SIGTRAPs back) it
 * adds through {@link Hooks}. Used on the tracer thread only.
 */
public final class TraceeControl {
  static final long DETACH_TIMEOUT_NANOS = 1_000_000_000L;

  /** Rounds of the detach of a thread whose own SIGTRAP may still be pending. */
  private static final int DETACH_ROUNDS = 8;

  /**
   * What a command adds to passing events on. Every method runs on the tracer thread while the
   * thread concerned is in a ptrace-stop (except {@link #exited}); the defaults add nothing.
   */
  public interface Hooks {
    Hooks NONE = new Hooks() { };

    /** A thread was seized by {@link #seizeAll}. */
    default void seized(Ptrace p, int tid) throws SyscallException { }

    /** Any stop of {@code tid}, before it is passed on: a thread first seen may need setting up. */
    default void stopped(Ptrace p, int tid) throws SyscallException { }

    /** {@code tid} exited or was killed. */
    default void exited(int tid) { }

    /** {@code tid} was killed while its stop was being passed on; its exit is reported next. */
    default void goneInStop(int tid) { }

    /** {@code tid} exec'd: its process's modules changed. */
    default void execed(Ptrace p, int tid) throws SyscallException { }

    /** A fork, vfork or clone event of {@code tid} (the child's id: the event message). */
    default void spawned(Ptrace p, int tid, int event) throws SyscallException { }

    /** Whether the command makes the target raise SIGTRAPs of its own (breakpoints). */
    default boolean raisesTraps() {
      return false;
    }

    /**
     * A SIGTRAP stop of {@code tid}: the work to run once the thread is resumed with the signal
     * suppressed if the trap is ours, or null if it is the target's own (delivered unchanged).
     */
    default Runnable trapped(Ptrace p, int tid) throws SyscallException {
      return null;
    }

    /** As {@link #trapped}, without acting on it: whether a pending SIGTRAP stop is ours. */
    default boolean ownTrap(Ptrace p, int tid) throws SyscallException {
      return false;
    }
  }

  private final ProcFs proc;
  private final int pid;
  private final int options;
  private final Hooks hooks;
  private WaitStatus exit;

  /**
   * @param options the ptrace options every thread is seized with (see {@link #options})
   * @param hooks what the command adds; they must not block
   */
  public TraceeControl(ProcFs proc, int pid, int options, Hooks hooks) {
    this.proc = proc;
    this.pid = pid;
    this.options = options;
    this.hooks = hooks;
  }

  /** ptrace options: threads and exec always, fork and vfork children when followed. */
  public static int options(boolean followForks) {
    int o = PtraceConstants.O_TRACECLONE | PtraceConstants.O_TRACEEXEC;
    return followForks ? o | PtraceConstants.O_TRACEFORK | PtraceConstants.O_TRACEVFORK : o;
  }

  /** The leader's exit status once the whole process is gone, else null. */
  public WaitStatus exit() {
    return exit;
  }

  /** Whether nothing is left to trace: the leader's exit was seen, or no thread is traced. */
  public boolean gone(Ptrace p) {
    return exit != null || !p.tracesAny();
  }

  /**
   * Seizes every thread, re-listing /proc/PID/task until no new thread appears (threads created
   * by an already seized thread are attached by the kernel through TRACECLONE).
   *
   * @return false if no thread could be seized (the process is gone)
   */
  public boolean seizeAll(Ptrace p) throws SyscallException {
    for (int round = 0; round < 100; round++) {
      drain(p);
      Set<Integer> traced = p.tracedThreads();
      List<Integer> fresh = new ArrayList<>();
      for (int tid : proc.forPid(pid).taskIdsOrEmpty()) {
        if (!traced.contains(tid)) {
          fresh.add(tid);
        }
      }
      if (fresh.isEmpty()) {
        return !traced.isEmpty();
      }
      for (int tid : fresh) {
        try {
          p.seize(tid, options);
        } catch (SyscallException e) {
          // ESRCH: gone since listed. EPERM on a thread (not the process itself): attached by
          // the kernel through a clone event we have not reaped yet.
          boolean leader = tid == pid;
          if (!(e.errno() == Errno.ESRCH || e.errno() == Errno.EPERM && !leader)) {
            throw e;
          }
        }
        if (p.traces(tid)) {
          hooks.seized(p, tid);
        }
      }
    }
    return !p.tracedThreads().isEmpty();
  }

  /** What {@link #seizeAll} returning false means, for a command that cannot go on without. */
  public static SyscallException processGone(int pid) {
    return new SyscallException("ptrace(SEIZE, " + pid + ")", Errno.ESRCH,
        SyscallException.Area.PTRACE);
  }

  /** Reaps and passes on every pending event. */
  public void drain(Ptrace p) throws SyscallException {
    p.reapAll();
    TraceEvent e;
    while ((e = p.nextEvent()) != null) {
      handle(p, e);
    }
  }

  /** Passes an event on so that the target sees exactly what it would see untraced. */
  public void handle(Ptrace p, TraceEvent e) throws SyscallException {
    try {
      passOn(p, e);
    } catch (SyscallException ex) {
      // ESRCH: the thread was killed in its stop (another thread's exit_group or exec wakes a
      // stopped tracee to die); its exit is reported next, nothing is left to do for it.
      if (ex.errno() != Errno.ESRCH) {
        throw ex;
      }
      hooks.goneInStop(e.tid());
    }
  }

  private void passOn(Ptrace p, TraceEvent e) throws SyscallException {
    WaitStatus st = e.status();
    int tid = e.tid();
    if (st.terminated()) {
      hooks.exited(tid);
      if (tid == pid) {
        exit = st; // the leader reports last, once the whole thread group is gone
      }
      return;
    }
    if (!st.stopped()) {
      return;
    }
    hooks.stopped(p, tid);
    int event = st.ptraceEvent();
    if (event == PtraceConstants.EVENT_STOP) {
      if (st.groupStop()) {
        listen(p, tid); // job control: stay stopped until SIGCONT, without us holding it
      } else {
        resume(p, tid, 0);
      }
    } else if (event == PtraceConstants.EVENT_EXEC) {
      hooks.execed(p, tid);
      resume(p, tid, 0);
    } else if (event == PtraceConstants.EVENT_FORK || event == PtraceConstants.EVENT_VFORK
        || event == PtraceConstants.EVENT_CLONE) {
      hooks.spawned(p, tid, event);
      resume(p, tid, 0);
    } else if (event != 0) {
      resume(p, tid, 0);
    } else {
      // A signal-delivery stop: our INTERRUPT never causes one (it stops with EVENT_STOP), so
      // the signal is the target's own and is delivered unchanged, SIGTRAP and SIGSTOP included,
      // unless the command's hooks claim a SIGTRAP as raised by its own breakpoint.
      Runnable ours = st.stopSignal() == Syscalls.SIGTRAP ? hooks.trapped(p, tid) : null;
      if (ours != null) {
        resume(p, tid, 0);
        ours.run();
      } else {
        resume(p, tid, st.stopSignal());
      }
    }
  }

  /** Whether a report is the stop our PTRACE_INTERRUPT causes (not job control). */
  public static boolean isInterruptStop(WaitStatus st) {
    return st.stopped() && st.ptraceEvent() == PtraceConstants.EVENT_STOP && !st.groupStop();
  }

  /** Resumes a stopped thread with {@code signal} (0: none); a thread killed meanwhile is done. */
  public void resume(Ptrace p, int tid, int signal) throws SyscallException {
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
  public int detachAll(Ptrace p) {
    int failed = 0;
    for (int tid : p.tracedThreads()) {
      try {
        if (!detach(p, tid)) {
          failed++;
        }
      } catch (SyscallException e) {
        failed++;
      }
    }
    return failed;
  }

  private boolean detach(Ptrace p, int tid) throws SyscallException {
    if (!hooks.raisesTraps()) {
      return p.detachSafely(tid, DETACH_TIMEOUT_NANOS);
    }
    detachWithoutOwnTraps(p, tid);
    return true;
  }

  /**
   * A SIGTRAP of the command's may already be queued for a thread (raised between its last
   * report and the disarm); detached with it pending, the thread would die of it, so such a
   * thread is let run into its signal-delivery stop, which is suppressed. The caller disarms
   * first.
   */
  private void detachWithoutOwnTraps(Ptrace p, int tid) throws SyscallException {
    WaitStatus st = p.stop(tid, DETACH_TIMEOUT_NANOS);
    for (int round = 0; round < DETACH_ROUNDS && st != null; round++) {
      if (st.signalDeliveryStop()) {
        int sig = st.stopSignal();
        if (sig == Syscalls.SIGTRAP && hooks.ownTrap(p, tid)) {
          sig = 0;
        }
        int deliver = sig;
        quietly(() -> p.detach(tid, deliver));
        return;
      }
      if (!sigtrapPending(tid)) {
        quietly(() -> p.detach(tid, 0));
        return;
      }
      p.cont(tid, 0); // runs straight into the pending SIGTRAP's stop
      TraceEvent next = p.awaitEvent(tid, DETACH_TIMEOUT_NANOS);
      st = next == null || next.status().terminated() ? null : next.status();
    }
  }

  /** SIGTRAP (bit 4) in the thread's private pending set, from /proc/TID/status SigPnd. */
  private boolean sigtrapPending(int tid) {
    try {
      String pnd = proc.forPid(tid).status().get("SigPnd").orElse("0");
      return (Long.parseUnsignedLong(pnd.trim(), 16) & (1L << (Syscalls.SIGTRAP - 1))) != 0;
    } catch (ProcReadException | NumberFormatException e) {
      return false;
    }
  }

  private interface PtraceCall {
    void run() throws SyscallException;
  }

  /** ESRCH means the thread died meanwhile (e.g. SIGKILL): nothing left to do for it. */
  private static void quietly(PtraceCall call) throws SyscallException {
    try {
      call.run();
    } catch (SyscallException e) {
      if (e.errno() != Errno.ESRCH) {
        throw e;
      }
    }
  }
}
