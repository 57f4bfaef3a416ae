package dev.polystack.host.ptrace;

import dev.polystack.host.sys.Native;
import java.lang.ref.Reference;
import java.util.Optional;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;
import jnr.ffi.annotations.SaveError;

/**
 * Lets the ptrace tracer thread sleep in a blocking waitpid and still notice a stop request or a
 * deadline: a POSIX timer sends this one thread a real-time signal every {@link #PERIOD_NANOS},
 * whose handler is installed without SA_RESTART, so the wait returns EINTR and the loop looks at
 * its flags. Sleeping matters for the target on a busy machine: a tracer that only polls waitpid
 * with WNOHANG takes CPU time the tracee needs to reach its stop (measured in docs/benchmarks.md,
 * "Figures behind the code's choices"); the tracers poll only briefly, for a report due within
 * microseconds, before they sleep (see Ptrace#SPIN_ALLOWED).
 *
 * <p>The handler does nothing; it only has to exist, since an ignored signal interrupts nothing.
 * It is libc's {@code abs}, a function of one int without side effects and async-signal-safe.
 * The signal is a real-time one that neither the JVM nor glibc uses, and the timer targets the
 * tracer thread alone (SIGEV_THREAD_ID), so no other thread and never the target sees it.
 *
 * <p>Both tracers use it: the vDSO ptrace backend sleeps between breakpoint reports, and the
 * ptrace sampler sleeps until an interrupted thread stops, bounded by its stop timeout.
 */
public final class TracerWakeup implements AutoCloseable {
  /** SIGRTMIN + 6 with glibc's SIGRTMIN of 34 (32 and 33 are glibc's own). */
  static final int SIGNAL = 40;
  /** How late a stop request or the deadline may be noticed while the target makes no call. */
  public static final long PERIOD_NANOS = 10_000_000L;

  private static final int CLOCK_MONOTONIC = 1;
  private static final int TIMER_ABSTIME = 1;
  private static final int SIGEV_THREAD_ID = 4;
  private static final long SYS_GETTID = 186;
  private static final long SYS_TIMER_CREATE = 222;
  private static final long SYS_TIMER_SETTIME = 223;
  private static final long SYS_TIMER_DELETE = 226;
  /** glibc's struct sigaction on x86-64: handler, 128-byte mask, flags, restorer. */
  private static final int SIGACTION_SIZE = 152;
  private static final int SIGACTION_FLAGS = 136;
  private static final int SIGEVENT_SIZE = 64;

  /** The libc entry points this needs beyond {@code sys.LibC}. */
  @SaveError
  public interface Signals {
    /** glibc's sigaction: it supplies the restorer the kernel requires on x86-64. */
    int sigaction(int signal, Pointer act, Pointer oldAct);

    long dlsym(long handle, String name);
  }

  private static final class Holder {
    static final Signals SIGNALS = LibraryLoader.create(Signals.class).load("c");
    /** Installed once per JVM; null if it could not be. */
    static final String FAILURE = install();

    private static String install() {
      long handler = SIGNALS.dlsym(0, "abs");
      if (handler == 0) {
        return "libc has no abs";
      }
      Pointer act = Native.allocate(SIGACTION_SIZE);
      act.setMemory(0, SIGACTION_SIZE, (byte) 0);
      act.putLong(0, handler);
      act.putInt(SIGACTION_FLAGS, 0); // no SA_RESTART: that is the point
      int r = SIGNALS.sigaction(SIGNAL, act, null);
      Reference.reachabilityFence(act);
      return r == 0 ? null : "sigaction(" + SIGNAL + ") failed, errno " + Native.errno();
    }
  }

  private final int timer;

  private TracerWakeup(int timer) {
    this.timer = timer;
  }

  /**
   * Starts waking the calling thread. Empty if the signal or the timer cannot be set up; the
   * caller then has to poll.
   */
  public static Optional<TracerWakeup> start() {
    if (Holder.FAILURE != null) {
      return Optional.empty();
    }
    long tid = Native.libc().syscall(SYS_GETTID, 0, 0, 0, 0, 0, 0);
    Pointer event = Native.allocate(SIGEVENT_SIZE);
    event.setMemory(0, SIGEVENT_SIZE, (byte) 0);
    event.putInt(8, SIGNAL);
    event.putInt(12, SIGEV_THREAD_ID);
    event.putInt(16, (int) tid);
    Pointer id = Native.allocate(8);
    id.putLong(0, 0);
    long created = Native.libc().syscall(SYS_TIMER_CREATE, CLOCK_MONOTONIC, event.address(),
        id.address(), 0, 0, 0);
    Reference.reachabilityFence(event);
    if (created != 0) {
      return Optional.empty();
    }
    TracerWakeup w = new TracerWakeup(id.getInt(0));
    Pointer spec = Native.allocate(32); // itimerspec: interval, then first expiry
    long sec = PERIOD_NANOS / 1_000_000_000L;
    long nsec = PERIOD_NANOS % 1_000_000_000L;
    spec.putLong(0, sec);
    spec.putLong(8, nsec);
    spec.putLong(16, sec);
    spec.putLong(24, nsec);
    long set = Native.libc().syscall(SYS_TIMER_SETTIME, w.timer, 0, spec.address(), 0, 0, 0);
    Reference.reachabilityFence(spec);
    if (set != 0) {
      w.close();
      return Optional.empty();
    }
    return Optional.of(w);
  }

  private Pointer spec;

  /**
   * Moves the next wake-up to {@code nanoTime} (System.nanoTime, which is CLOCK_MONOTONIC), after
   * which it goes on every {@link #PERIOD_NANOS}: a loop that sleeps in waitpid until its next
   * tick wakes once for it, not every period. False if the kernel refused (the period stays).
   */
  public boolean wakeAt(long nanoTime) {
    if (spec == null) {
      spec = Native.allocate(32);
      spec.putLong(0, PERIOD_NANOS / 1_000_000_000L);
      spec.putLong(8, PERIOD_NANOS % 1_000_000_000L);
    }
    long at = Math.max(1, nanoTime);
    spec.putLong(16, at / 1_000_000_000L);
    spec.putLong(24, at % 1_000_000_000L);
    return Native.libc().syscall(SYS_TIMER_SETTIME, timer, TIMER_ABSTIME, spec.address(), 0, 0,
        0) == 0;
  }

  /** Stops the timer; a signal already queued runs the empty handler and is gone. */
  @Override
  public void close() {
    Native.libc().syscall(SYS_TIMER_DELETE, timer, 0, 0, 0, 0, 0);
  }
}
