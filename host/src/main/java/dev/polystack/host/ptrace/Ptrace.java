package dev.polystack.host.ptrace;

import dev.polystack.host.sys.DiagnosticSwitches;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.LibC;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.SyscallException.Area;
import dev.polystack.host.sys.Syscalls;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import jnr.ffi.Pointer;

/**
 * ptrace requests and waitpid for the threads of one target, usable only on the owning {@link
 * Tracer}'s thread: the kernel accepts ptrace requests only from the thread that attached.
 *
 * <p>Besides the raw requests it keeps the bookkeeping that makes an orderly detach possible:
 * which threads are seized, whether each is known to be stopped, and wait reports that were
 * reaped from the kernel but not yet consumed by the caller.
 */
public final class Ptrace {
  private enum State {
    RUNNING,
    STOPPED
  }

  private final Thread owner;
  private final int pid;
  private final LibC libc = Native.libc();
  private final Pointer scratch = Native.allocate(UserRegs.SIZE);
  private final Map<Integer, State> threads = new HashMap<>();
  private final Map<Integer, WaitStatus> lastStop = new HashMap<>();
  private final Map<Integer, ArrayDeque<WaitStatus>> pending = new HashMap<>();
  private final ArrayDeque<TraceEvent> arrival = new ArrayDeque<>();
  private final int[] statusOut = new int[1];

  Ptrace(Thread owner, int pid) {
    this.owner = owner;
    this.pid = pid;
  }

  /** Process id (thread group id) of the target. */
  public int pid() {
    return pid;
  }

  /** Threads currently seized, in the order they were seized. */
  public Set<Integer> tracedThreads() {
    checkThread();
    return Collections.unmodifiableSet(new LinkedHashSet<>(threads.keySet()));
  }

  /** Whether any thread is seized; unlike {@link #tracedThreads()} it copies nothing. */
  public boolean tracesAny() {
    checkThread();
    return !threads.isEmpty();
  }

  /** Whether {@code tid} is seized; unlike {@link #tracedThreads()} it copies nothing. */
  public boolean traces(int tid) {
    checkThread();
    return threads.containsKey(tid);
  }

  /** True if the last report for {@code tid} was a stop and it has not been resumed since. */
  public boolean isStopped(int tid) {
    checkThread();
    return threads.get(tid) == State.STOPPED;
  }

  public void seize(int tid, int options) throws SyscallException {
    checkThread();
    call(PtraceConstants.SEIZE, "SEIZE", tid, 0, options & 0xffffffffL);
    threads.put(tid, State.RUNNING);
  }

  public void interrupt(int tid) throws SyscallException {
    checkThread();
    call(PtraceConstants.INTERRUPT, "INTERRUPT", tid, 0, 0);
  }

  /** Resumes a stopped thread, delivering {@code signal} (0 for none). */
  public void cont(int tid, int signal) throws SyscallException {
    checkThread();
    call(PtraceConstants.CONT, "CONT", tid, 0, signal);
    threads.put(tid, State.RUNNING);
  }

  /** Resumes a stopped thread until its next system call entry or exit (PTRACE_SYSCALL). */
  public void syscall(int tid, int signal) throws SyscallException {
    checkThread();
    call(PtraceConstants.SYSCALL, "SYSCALL", tid, 0, signal);
    threads.put(tid, State.RUNNING);
  }

  /** Lets a group-stopped thread wait for SIGCONT without the tracer holding it in ptrace-stop. */
  public void listen(int tid) throws SyscallException {
    checkThread();
    call(PtraceConstants.LISTEN, "LISTEN", tid, 0, 0);
    threads.put(tid, State.RUNNING);
  }

  /** Detaches a stopped thread, delivering {@code signal} (0 for none). */
  public void detach(int tid, int signal) throws SyscallException {
    checkThread();
    call(PtraceConstants.DETACH, "DETACH", tid, 0, signal);
    forget(tid);
  }

  public UserRegs getRegs(int tid) throws SyscallException {
    checkThread();
    call(PtraceConstants.GETREGS, "GETREGS", tid, 0, scratch.address());
    return UserRegs.read(scratch);
  }

  public long peekUser(int tid, long offset) throws SyscallException {
    checkThread();
    return peek(PtraceConstants.PEEKUSER, "PEEKUSER", tid, offset);
  }

  public void pokeUser(int tid, long offset, long value) throws SyscallException {
    checkThread();
    call(PtraceConstants.POKEUSER, "POKEUSER", tid, offset, value);
  }

  /** Reads one 8-byte word of tracee memory; {@code address} need not be aligned. */
  public long peekData(int tid, long address) throws SyscallException {
    checkThread();
    return peek(PtraceConstants.PEEKDATA, "PEEKDATA", tid, address);
  }

  public SigInfo getSigInfo(int tid) throws SyscallException {
    checkThread();
    call(PtraceConstants.GETSIGINFO, "GETSIGINFO", tid, 0, scratch.address());
    return SigInfo.read(scratch);
  }

  /** New tid for CLONE/FORK/VFORK events, exit status for EXIT, former tid for EXEC. */
  public long getEventMsg(int tid) throws SyscallException {
    checkThread();
    call(PtraceConstants.GETEVENTMSG, "GETEVENTMSG", tid, 0, scratch.address());
    return scratch.getLong(0);
  }

  public void tgkill(int tid, int signal) throws SyscallException {
    Syscalls.tgkill(pid, tid, signal);
  }

  /**
   * Next report for {@code tid}, consulting reports already reaped first; waits up to {@code
   * timeoutNanos} (0 = just poll). Returns null on timeout.
   */
  public TraceEvent awaitEvent(int tid, long timeoutNanos) throws SyscallException {
    checkThread();
    long deadline = System.nanoTime() + timeoutNanos;
    long backoff = 20_000;
    while (true) {
      TraceEvent e = takePending(tid);
      if (e != null) {
        return e;
      }
      if (reap(tid)) {
        continue;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return null;
      }
      // waitpid has no timeout, so poll with WNOHANG and a short, growing pause.
      LockSupport.parkNanos(Math.min(backoff, left));
      backoff = Math.min(backoff * 2, 2_000_000);
    }
  }

  /** Next report for any traced thread, oldest first. Returns null on timeout. */
  public TraceEvent awaitAnyEvent(long timeoutNanos) throws SyscallException {
    checkThread();
    long deadline = System.nanoTime() + timeoutNanos;
    long backoff = 20_000;
    while (true) {
      TraceEvent e = arrival.peekFirst();
      if (e != null) {
        return takePending(e.tid());
      }
      boolean any = false;
      for (Integer tid : threads.keySet().toArray(new Integer[0])) {
        any |= reap(tid);
      }
      if (any) {
        continue;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return null;
      }
      LockSupport.parkNanos(Math.min(backoff, left));
      backoff = Math.min(backoff * 2, 2_000_000);
    }
  }

  /**
   * Brings a thread to a ptrace-stop if it is not already in one and returns that stop (which may
   * be another report than the interrupt's, e.g. a signal-delivery stop), consuming the thread's
   * queued reports; null if the thread exited meanwhile.
   */
  public WaitStatus stop(int tid, long timeoutNanos) throws SyscallException {
    checkThread();
    if (threads.get(tid) == State.STOPPED) {
      return takeStop(tid);
    }
    if (!threads.containsKey(tid)) {
      return null;
    }
    try {
      interrupt(tid);
    } catch (SyscallException e) {
      if (e.errno() != Errno.ESRCH) {
        throw e;
      }
      // ESRCH: either already stopped (e.g. in a stop not yet reaped) or exiting; waitpid tells.
    }
    long deadline = System.nanoTime() + timeoutNanos;
    while (true) {
      reap(tid);
      State s = threads.get(tid);
      if (s == null) {
        return null;
      }
      if (s == State.STOPPED) {
        return takeStop(tid);
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return null;
      }
      LockSupport.parkNanos(Math.min(200_000, left));
    }
  }

  /**
   * Detaches {@code tid} so it keeps running: stops it first if needed (DETACH on a running
   * thread fails with ESRCH) and passes back a signal it was about to receive.
   */
  public boolean detachSafely(int tid, long timeoutNanos) throws SyscallException {
    checkThread();
    for (int attempt = 0; attempt < 3; attempt++) {
      WaitStatus st = stop(tid, timeoutNanos);
      if (st == null) {
        if (!threads.containsKey(tid)) {
          return true;
        }
        continue;
      }
      int sig = st.signalDeliveryStop() ? st.stopSignal() : 0;
      try {
        detach(tid, sig);
        return true;
      } catch (SyscallException e) {
        if (e.errno() != Errno.ESRCH) {
          throw e;
        }
        // Not in a stop after all (e.g. killed by SIGKILL meanwhile): re-evaluate.
        threads.computeIfPresent(tid, (k, v) -> State.RUNNING);
      }
    }
    return !threads.containsKey(tid);
  }

  /**
   * Reaps every report the kernel holds for any tracee of this thread, without blocking, and
   * queues them for {@link #nextEvent()}. One waitpid per report instead of one per thread:
   * {@code __WNOTHREAD} keeps it to this thread's own tracees and children, so it never takes a
   * report meant for another tracer or for the JVM's process reaper.
   *
   * @return how many reports were reaped
   */
  public int reapAll() throws SyscallException {
    checkThread();
    int n = 0;
    while (true) {
      int r = libc.waitpid(-1, statusOut,
          PtraceConstants.WALL | PtraceConstants.WNOTHREAD | PtraceConstants.WNOHANG);
      if (r == 0) {
        return n;
      }
      if (r < 0) {
        int errno = Native.errno();
        if (errno == Errno.ECHILD) {
          return n;
        }
        if (errno == Errno.EINTR) {
          continue;
        }
        throw new SyscallException("waitpid(-1, __WALL|__WNOTHREAD|WNOHANG)", errno, Area.PTRACE);
      }
      record(new TraceEvent(r, new WaitStatus(statusOut[0])));
      n++;
    }
  }

  /**
   * Waits until the kernel has a report for any tracee of this thread and queues it for {@link
   * #nextEvent()}: first polls for up to {@code spinNanos} (see {@link #SPIN_ALLOWED}), for a
   * report expected within microseconds such as the return breakpoint of a call whose entry was
   * just handled, then sleeps in waitpid. Polling longer would cost a busy machine the CPU time the
   * tracee needs; sleeping right away costs an idle one the wake-up of a halted vCPU (both measured
   * in docs/benchmarks.md, "Figures behind the code's choices"). A signal with a handler installed
   * without SA_RESTART ends the sleep early (see {@link TracerWakeup}).
   *
   * @return true if a report was queued; false if a signal interrupted the wait or there is no
   *     tracee left to wait for
   */
  public boolean awaitAny(long spinNanos) throws SyscallException {
    checkThread();
    if (SPIN_ALLOWED && spinNanos > 0) {
      long until = System.nanoTime() + spinNanos;
      do {
        // One report is enough: the caller handles it at once, where another poll would only
        // add a syscall to the time the tracee is held.
        int r = libc.waitpid(-1, statusOut,
            PtraceConstants.WALL | PtraceConstants.WNOTHREAD | PtraceConstants.WNOHANG);
        if (r > 0) {
          record(new TraceEvent(r, new WaitStatus(statusOut[0])));
          return true;
        }
        if (r < 0 && Native.errno() != Errno.EINTR) {
          break; // ECHILD or worse: the blocking wait below says which
        }
        pauseBetweenPolls();
      } while (System.nanoTime() < until);
    }
    int r = libc.waitpid(-1, statusOut, PtraceConstants.WALL | PtraceConstants.WNOTHREAD);
    if (r > 0) {
      record(new TraceEvent(r, new WaitStatus(statusOut[0])));
      return true;
    }
    int errno = Native.errno();
    if (errno == Errno.ECHILD) {
      // No tracee left for this thread (all exited and reaped): nothing is traced any more.
      threads.clear();
      lastStop.clear();
      return false;
    }
    if (errno == Errno.EINTR) {
      return false;
    }
    throw new SyscallException("waitpid(-1, __WALL|__WNOTHREAD)", errno, Area.PTRACE);
  }

  /** The oldest queued report of any thread, or null; call {@link #reapAll()} to fill the queue. */
  public TraceEvent nextEvent() {
    checkThread();
    TraceEvent e = arrival.peekFirst();
    return e == null ? null : takePending(e.tid());
  }

  /** The oldest queued report of {@code tid}, or null. */
  public TraceEvent takeEvent(int tid) {
    checkThread();
    return takePending(tid);
  }

  /**
   * Whether a tracer may poll for a report it expects within microseconds before it sleeps in
   * waitpid. A sleeping tracer leaves its CPU idle, and a virtual CPU that goes idle is halted by
   * the hypervisor: the tracee's stop then has to wake it, which on this machine (guest halt
   * polling off) costs tens of microseconds at the median and, when the host is slow to run
   * the halted CPU again, milliseconds, all of it while the tracee is held. A short poll keeps
   * the CPU awake for exactly the window in which the report arrives. On one CPU a poll would
   * only keep the tracee from running, so it is off there.
   */
  public static final boolean SPIN_ALLOWED = Runtime.getRuntime().availableProcessors() > 1
      && DiagnosticSwitches.CURRENT.spinWait();

  /**
   * What a spinning wait does between two polls: yield the CPU. When nothing else wants it this
   * returns at once; when the tracee does (it shares the tracer's CPU, e.g. on a busy machine or
   * while the JIT compiles), a plain spin would keep it from reaching the stop it waits for until
   * the spin gave up (measured in docs/benchmarks.md, "Figures behind the code's choices").
   */
  private static void pauseBetweenPolls() {
    Thread.yield();
  }

  /** First and largest sleep between two polls for a stop (see {@link #awaitStop}). */
  static final long STOP_POLL_FIRST_NANOS = 10_000;
  static final long STOP_POLL_MAX_NANOS = 100_000;

  /**
   * Waits for the stop an INTERRUPT just asked for. It does not block in waitpid, which has no
   * timeout: a thread in uninterruptible sleep may not stop for a long time, and meanwhile every
   * other thread's events (signals, clones) would wait for us. It does not spin either: on a
   * loaded machine the target needs the CPU time a spinning tracer takes (the scheduler groups
   * the tracer with the target it launched) to reach its stop at all (measured in
   * docs/benchmarks.md, "Figures behind the code's choices"). So it polls with short sleeps,
   * growing from {@link #STOP_POLL_FIRST_NANOS}; the tracer thread runs with a fine timer slack
   * (see {@link Tracer}) so a short sleep is not rounded up to the default 50 us. Returns the
   * stop, or null if the thread exited or the timeout passed.
   */
  public WaitStatus awaitStop(int tid, long timeoutNanos) throws SyscallException {
    checkThread();
    long deadline = System.nanoTime() + timeoutNanos;
    long sleep = STOP_POLL_FIRST_NANOS;
    while (true) {
      if (threads.get(tid) != State.RUNNING) {
        return stopOrNull(tid);
      }
      reap(tid);
      if (threads.get(tid) != State.RUNNING) {
        continue;
      }
      long now = System.nanoTime();
      if (now >= deadline) {
        return null;
      }
      LockSupport.parkNanos(Math.min(sleep, deadline - now));
      sleep = Math.min(sleep * 2, STOP_POLL_MAX_NANOS);
    }
  }

  /**
   * Runs the native call paths a sample takes (the ptrace and waitpid entry points, the register
   * copy) on {@code tid} without affecting it, so that the JIT has compiled them before the first
   * sample instead of during the first samples' pauses. GETREGS on a running tracee fails with
   * ESRCH and changes nothing; on one that is held stopped it just reads its registers; a report
   * that waitpid finds is queued as usual.
   */
  public void warmUp(int tid, int rounds) throws SyscallException {
    checkThread();
    for (int i = 0; i < rounds; i++) {
      if (libc.ptrace(PtraceConstants.GETREGS, tid, 0, scratch.address()) != -1) {
        UserRegs.read(scratch);
      }
      reap(tid);
    }
  }

  /**
   * Waits for the stop an INTERRUPT just asked for: polls for up to {@code spinNanos} (see {@link
   * #SPIN_ALLOWED}), about how long a running thread takes to reach the stop, then blocks in
   * waitpid as the C floor does: the kernel wakes this thread the moment the tracee stops, where
   * a sleeping poll may wait for a scheduler slice on a busy machine. Use it only for a thread
   * that was seen running just before the interrupt, and only on a thread that a {@link
   * TracerWakeup} interrupts: waitpid has no timeout, and a thread that entered uninterruptible
   * sleep in between would otherwise hold up this call (and every other thread's events) for as
   * long as it sleeps. The wake-up's signal ends the wait with EINTR and the deadline is checked
   * then, so the wait lasts at most {@code timeoutNanos} plus one wake-up period. Returns the
   * report (a stop, possibly for another reason than the interrupt), or null if the thread is
   * gone or the timeout passed. Other threads' reports stay with the kernel for the event loop.
   */
  public WaitStatus awaitStopBlocking(int tid, long timeoutNanos, long spinNanos)
      throws SyscallException {
    checkThread();
    long start = System.nanoTime();
    long deadline = start + timeoutNanos;
    long spinUntil = SPIN_ALLOWED ? start + spinNanos : start;
    while (true) {
      if (threads.get(tid) != State.RUNNING) {
        return stopOrNull(tid);
      }
      if (System.nanoTime() < spinUntil) {
        if (!reap(tid)) {
          pauseBetweenPolls();
        }
        continue;
      }
      // Only tid's report. Reaping another thread's signal-delivery-stop here would clear its
      // exit code in the kernel until the event loop passes the signal on; a polystack killed
      // in between would lose that signal for the target. A leader that exits with its thread
      // group reports only after the others' exits are reaped: the deadline ends that wait.
      int r = libc.waitpid(tid, statusOut, PtraceConstants.WALL);
      if (r < 0) {
        int errno = Native.errno();
        if (errno == Errno.EINTR) {
          if (System.nanoTime() >= deadline) {
            return null;
          }
          continue;
        }
        if (errno == Errno.ECHILD) {
          forget(tid); // nothing left to wait for: tid is not ours any more
          return null;
        }
        throw new SyscallException("waitpid(" + tid + ", __WALL)", errno, Area.PTRACE);
      }
      record(new TraceEvent(r, new WaitStatus(statusOut[0])));
    }
  }

  /**
   * What a wait for {@code tid} returns once the thread is no longer running: its stop, or null
   * when it is not traced any more (exited, detached).
   */
  private WaitStatus stopOrNull(int tid) {
    return threads.get(tid) == State.STOPPED ? lastStop.get(tid) : null;
  }

  /** Reaps at most one pending kernel report for {@code tid}; true if one was found. */
  private boolean reap(int tid) throws SyscallException {
    int r = libc.waitpid(tid, statusOut, PtraceConstants.WALL | PtraceConstants.WNOHANG);
    if (r == 0) {
      return false;
    }
    if (r < 0) {
      int errno = Native.errno();
      if (errno == Errno.ECHILD) {
        // Already reaped elsewhere or not ours any more; either way it will report nothing.
        forget(tid);
        return false;
      }
      throw new SyscallException("waitpid(" + tid + ", __WALL|WNOHANG)", errno, Area.PTRACE);
    }
    record(new TraceEvent(r, new WaitStatus(statusOut[0])));
    return true;
  }

  private void record(TraceEvent e) throws SyscallException {
    int tid = e.tid();
    WaitStatus st = e.status();
    pending.computeIfAbsent(tid, k -> new ArrayDeque<>()).add(st);
    arrival.add(e);
    if (st.terminated()) {
      threads.remove(tid);
      lastStop.remove(tid);
    } else if (st.stopped()) {
      threads.put(tid, State.STOPPED);
      lastStop.put(tid, st);
      int ev = st.ptraceEvent();
      if (ev == PtraceConstants.EVENT_CLONE
          || ev == PtraceConstants.EVENT_FORK
          || ev == PtraceConstants.EVENT_VFORK) {
        // Auto-attached by the kernel; track it so close() also detaches it.
        int child = (int) getEventMsg(tid);
        threads.putIfAbsent(child, State.RUNNING);
      }
    }
  }

  private TraceEvent takePending(int tid) {
    ArrayDeque<WaitStatus> q = pending.get(tid);
    if (q == null || q.isEmpty()) {
      return null;
    }
    WaitStatus st = q.poll();
    arrival.removeFirstOccurrence(new TraceEvent(tid, st));
    return new TraceEvent(tid, st);
  }

  /**
   * The stop {@code tid} is in, consuming its queued reports: a stopped thread reports nothing
   * newer, and a report left queued would answer a later {@link #awaitEvent} before that call's
   * own stop has happened.
   */
  private WaitStatus takeStop(int tid) {
    discardPending(tid);
    return lastStop.get(tid);
  }

  private void discardPending(int tid) {
    ArrayDeque<WaitStatus> q = pending.remove(tid);
    if (q != null && !q.isEmpty()) {
      arrival.removeIf(e -> e.tid() == tid);
    }
  }

  private void forget(int tid) {
    threads.remove(tid);
    lastStop.remove(tid);
    discardPending(tid);
  }

  private void call(int request, String name, int tid, long addr, long data)
      throws SyscallException {
    long r = libc.ptrace(request, tid, addr, data);
    if (r == -1) {
      throw new SyscallException("ptrace(" + name + ", " + tid + ")", Native.errno(), Area.PTRACE);
    }
  }

  // PEEK* return the word itself, so -1 is ambiguous; errno tells success from failure.
  private long peek(int request, String name, int tid, long addr) throws SyscallException {
    Native.clearErrno();
    long r = libc.ptrace(request, tid, addr, 0);
    if (r == -1) {
      int errno = Native.errno();
      if (errno != 0) {
        throw new SyscallException(
            "ptrace(" + name + ", " + tid + ", 0x" + Long.toHexString(addr) + ")", errno, Area.PTRACE);
      }
    }
    return r;
  }

  void checkThread() {
    if (Thread.currentThread() != owner) {
      throw new IllegalStateException(
          "ptrace requests must run on the tracer thread " + owner.getName()
              + "; submit them through Tracer");
    }
  }
}
