package dev.polystack.host.sampling;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ThreadState;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.ptrace.Ptrace;
import dev.polystack.host.ptrace.TraceEvent;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The ptrace sampling loop. It runs as one task on the target's tracer thread, because every
 * ptrace request must come from the thread that attached. Per tick it stops only the threads it
 * samples, one at a time, for as long as it takes to read registers and walk the stack, and
 * resumes each at once; between ticks it passes on every event (signals, clones, exec, job
 * control) so the target behaves as if untraced. On every way out it detaches all threads.
 */
final class PtraceSampler {
  static final int OPTIONS = TraceeControl.OPTIONS;

  /** A thread that does not stop within this time (uninterruptible sleep) is skipped. */
  static final long STOP_TIMEOUT_NANOS = 20_000_000;

  private final TargetProcess target;
  private final SamplingOptions options;
  private final StackWalker walker;
  private final SampleSink sink;
  private final ProcFs proc;
  private final Runnable refreshRequest;
  private final TraceeControl control;
  private long lastRefresh = Long.MIN_VALUE / 2;
  private final PauseBreakdown breakdown = PauseBreakdown.ENABLED ? new PauseBreakdown() : null;

  static final long REFRESH_INTERVAL_NANOS = 100_000_000L;

  /**
   * @param refreshRequest asks another thread to re-read the target's memory map (after exec, or
   *     when a PC lies outside every known module); it must not block
   */
  PtraceSampler(TargetProcess target, SamplingOptions options, StackWalker walker,
      SampleSink sink, ProcFs proc, Runnable refreshRequest) {
    this.target = target;
    this.options = options;
    this.walker = walker;
    this.sink = sink;
    this.proc = proc;
    this.refreshRequest = refreshRequest;
    this.control = new TraceeControl(target.pid(), refreshRequest);
  }

  /**
   * Seizes the target and samples until {@code stop} or its exit. With {@code heldAtExec} the
   * target is a program we launched, already seized and held in its exec stop: it is resumed
   * here, just before the first tick, so that none of it runs unsampled.
   */
  SamplerOutcome run(Tracer tracer, BooleanSupplier stop, boolean heldAtExec)
      throws SyscallException {
    return tracer.call(p -> loop(p, stop, heldAtExec));
  }

  private SamplerOutcome loop(Ptrace p, BooleanSupplier stop, boolean heldAtExec)
      throws SyscallException {
    boolean byUser = false;
    try {
      if (heldAtExec) {
        control.resume(p, target.pid(), 0);
      } else {
        control.seizeAll(p);
      }
      long period = options.periodNanos();
      long start = System.nanoTime();
      long end = options.durationNanos() == 0 ? Long.MAX_VALUE : start + options.durationNanos();
      long next = start;
      while (true) {
        control.drain(p);
        if (control.gone(p)) {
          break;
        }
        if (stop.getAsBoolean()) {
          byUser = true;
          break;
        }
        long now = System.nanoTime();
        if (now >= end) {
          break;
        }
        if (now >= next) {
          tick(p);
          next += period;
          long after = System.nanoTime();
          if (after - next > period) {
            // The loop fell behind (a slow walk, a busy host): skip ticks instead of bursting.
            long missed = (after - next) / period;
            for (long i = 0; i < missed; i++) {
              sink.lost("late_tick");
            }
            next += missed * period;
          }
        } else {
          // Wake at the next tick, but at least every millisecond to pass on events promptly.
          LockSupport.parkNanos(Math.min(next - now, 1_000_000));
        }
      }
    } finally {
      for (int i = control.detachAll(p); i > 0; i--) {
        sink.lost("detach_failed");
      }
      if (PauseBreakdown.ENABLED) {
        System.err.println("polystack: " + breakdown.report());
      }
    }
    return new SamplerOutcome(control.exit(), byUser, control.exit() != null);
  }

  private void tick(Ptrace p) throws SyscallException {
    for (int tid : p.tracedThreads()) {
      if (!options.threads().isEmpty() && !options.threads().contains(tid)) {
        continue;
      }
      if (!options.idle() && !onCpu(tid)) {
        continue;
      }
      sampleOne(p, tid);
    }
  }

  /** Thread state from /proc, read before stopping anything: a stopped thread looks idle. */
  private boolean onCpu(int tid) {
    try {
      ThreadState s = proc.forPid(target.pid()).taskStat(tid).state();
      return s.isOnCpu();
    } catch (ProcReadException e) {
      return false;
    }
  }

  private void sampleOne(Ptrace p, int tid) throws SyscallException {
    long t0 = System.nanoTime();
    if (PauseBreakdown.ENABLED) {
      breakdown.start(t0);
    }
    try {
      p.interrupt(tid);
    } catch (SyscallException e) {
      if (e.errno() == Errno.ESRCH) {
        sink.lost("thread_gone");
        return;
      }
      throw e;
    }
    if (PauseBreakdown.ENABLED) {
      breakdown.mark(PauseBreakdown.INTERRUPT);
    }
    WaitStatus stopped = p.awaitStop(tid, STOP_TIMEOUT_NANOS);
    if (stopped == null) {
      // Still running (uninterruptible sleep) or gone; the stop, if it comes, is passed on later.
      sink.lost(p.tracedThreads().contains(tid) ? "stop_timeout" : "thread_gone");
      return;
    }
    TraceEvent event = p.takeEvent(tid);
    if (PauseBreakdown.ENABLED) {
      breakdown.mark(PauseBreakdown.WAIT);
    }
    if (event == null || !isInterruptStop(event.status())) {
      // Something else happened first (a signal, a clone): pass it on; the interrupt's own stop
      // arrives later and is resumed by the event loop.
      if (event != null) {
        control.handle(p, event);
      }
      sink.lost("raced_event");
      return;
    }
    ThreadSample sample;
    try {
      sample = capture(p, tid);
    } finally {
      control.resume(p, tid, 0);
    }
    long t1 = System.nanoTime();
    if (PauseBreakdown.ENABLED) {
      breakdown.mark(PauseBreakdown.CONT);
      breakdown.commit();
    }
    refreshIfStale(sample.stack());
    sink.accept(new ThreadSample(sample.tid(), sample.epochNanos(), sample.stack(), t1 - t0));
  }

  private ThreadSample capture(Ptrace p, int tid) throws SyscallException {
    RawStack stack = walkStopped(p, tid, target, target.hostMemory(), walker,
        options.stackBytes(), DumpSession.Hook.NONE, breakdown);
    return new ThreadSample(tid, System.currentTimeMillis() * 1_000_000L, stack, 0);
  }

  /**
   * A PC in no known module means the map changed (a library loaded after exec, JIT code): re-read
   * it right here, after the thread was resumed, so the next sample already knows it. The helper
   * thread would do it too, but on a busy host it may not run for a long time. Rate-limited.
   */
  private void refreshIfStale(RawStack stack) {
    if (!stack.errors().contains("no_module")) {
      return;
    }
    long now = System.nanoTime();
    if (now - lastRefresh < REFRESH_INTERVAL_NANOS) {
      refreshRequest.run();
      return;
    }
    lastRefresh = now;
    try {
      target.refresh();
    } catch (dev.polystack.host.proc.ProcReadException e) {
      // The process is going away; the event loop notices.
    } catch (RuntimeException e) {
      sink.lost("refresh_failed");
    }
  }

  /** Reads registers and walks the stack of a thread that is in a ptrace-stop. */
  static RawStack walkStopped(Ptrace p, int tid, TargetProcess target, StackWalker walker,
      int stackBytes) throws SyscallException {
    return walkStopped(p, tid, target, target.hostMemory(), walker, stackBytes,
        DumpSession.Hook.NONE, null);
  }

  /**
   * As above, reading through {@code live} and letting {@code hook} wrap the thread's memory
   * (snapshots record what the walk reads); {@code breakdown} times the steps when enabled.
   */
  static RawStack walkStopped(Ptrace p, int tid, TargetProcess target,
      dev.polystack.host.memory.RemoteMemory live, StackWalker walker, int stackBytes,
      DumpSession.Hook hook, PauseBreakdown breakdown) throws SyscallException {
    var regs = ApiRegisters.of(p.getRegs(tid));
    if (PauseBreakdown.ENABLED && breakdown != null) {
      breakdown.mark(PauseBreakdown.GETREGS);
    }
    SampleMemory memory = SampleMemory.live(live);
    memory.prefetch(regs.sp(), stackBytes);
    if (PauseBreakdown.ENABLED && breakdown != null) {
      breakdown.mark(PauseBreakdown.READ);
    }
    CapturedThread thread = new CapturedThread(target.pid(), tid, regs,
        hook.thread(tid, regs, memory), regs.sp(), 0);
    RawStack stack = walker.walk(thread, target.table());
    if (PauseBreakdown.ENABLED && breakdown != null) {
      breakdown.mark(PauseBreakdown.WALK);
    }
    return stack;
  }

  private static boolean isInterruptStop(WaitStatus st) {
    return TraceeControl.isInterruptStop(st);
  }
}
