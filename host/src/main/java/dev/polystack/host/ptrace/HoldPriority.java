package dev.polystack.host.ptrace;

import dev.polystack.host.sys.DiagnosticSwitches;
import dev.polystack.host.sys.Native;
import jnr.ffi.Pointer;

/**
 * Real-time priority for the tracer thread while it holds a target thread stopped, and only then.
 * Between the interrupt and the resume nothing else of polystack may run in the tracer's place: the
 * JVM's compiler threads wake during the first samples of a record and would preempt the tracer for
 * a scheduler slice while the target waits (measured in docs/benchmarks.md, "Figures behind the
 * code's choices"). As SCHED_FIFO the tracer cannot be preempted by normal threads; it drops back
 * to SCHED_OTHER right after the resume, so its work on the copy (the walk) competes with the
 * target as before.
 *
 * <p>A real-time thread that spins keeps a normal thread off its CPU, the target included if it
 * shares that CPU: callers spin for a stop only when the target runs on another CPU ({@link
 * #currentCpu}). Best effort: without CAP_SYS_NICE the first refusal turns it off for good, and
 * sampling goes on at normal priority. One instance per tracer thread, used only on it.
 */
public final class HoldPriority {
  private static final long SYS_SCHED_SETSCHEDULER = 144;
  private static final long SYS_GETCPU = 309;
  private static final int SCHED_OTHER = 0;
  private static final int SCHED_FIFO = 1;
  /** The lowest real-time priority: above every normal thread, below the kernel's own. */
  private static final int FIFO_PRIORITY = 1;

  private final Thread owner;
  private final Pointer fifoParam;
  private final Pointer otherParam;
  private final Pointer cpuOut;
  private boolean enabled;
  private boolean held;

  private HoldPriority(boolean enabled) {
    this.owner = Thread.currentThread();
    this.enabled = enabled;
    this.fifoParam = enabled ? Native.allocate(8) : null;
    this.otherParam = enabled ? Native.allocate(8) : null;
    this.cpuOut = Native.allocate(8);
    if (enabled) {
      fifoParam.putInt(0, FIFO_PRIORITY);
      otherParam.putInt(0, 0);
    }
  }

  /**
   * For the calling thread (the tracer). {@code -Dpolystack.holdPriority=false} turns it off, to
   * compare.
   */
  public static HoldPriority forCurrentThread() {
    return forCurrentThread(DiagnosticSwitches.CURRENT);
  }

  /** For the calling thread, as {@code switches} say. */
  public static HoldPriority forCurrentThread(DiagnosticSwitches switches) {
    return new HoldPriority(switches.holdPriority());
  }

  /** Raises the tracer to SCHED_FIFO; returns whether it now runs at real-time priority. */
  public boolean hold() {
    checkThread();
    if (!enabled || held) {
      return held;
    }
    long r = Native.libc().syscall(SYS_SCHED_SETSCHEDULER, 0, SCHED_FIFO, fifoParam.address(),
        0, 0, 0);
    if (r != 0) {
      enabled = false; // EPERM: no CAP_SYS_NICE (or an RLIMIT_RTPRIO of 0); asking again is futile
      return false;
    }
    held = true;
    return true;
  }

  /** Back to SCHED_OTHER. A no-op unless {@link #hold} succeeded. */
  public void release() {
    checkThread();
    if (!held) {
      return;
    }
    Native.libc().syscall(SYS_SCHED_SETSCHEDULER, 0, SCHED_OTHER, otherParam.address(), 0, 0, 0);
    held = false;
  }

  /** Whether the last {@link #hold} raised the priority and it was not released since. */
  public boolean held() {
    return held;
  }

  /** The CPU the tracer runs on now, or -1 when unknown. */
  public int currentCpu() {
    long r = Native.libc().syscall(SYS_GETCPU, cpuOut.address(), 0, 0, 0, 0, 0);
    return r == 0 ? cpuOut.getInt(0) : -1;
  }

  private void checkThread() {
    if (Thread.currentThread() != owner) {
      throw new IllegalStateException("HoldPriority used off its tracer thread");
    }
  }
}
