package dev.polystack.host.sampling.ptrace;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.TaskStat;
import dev.polystack.host.process.ModuleTable;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.ptrace.HoldPriority;
import dev.polystack.host.ptrace.Ptrace;
import dev.polystack.host.ptrace.UserRegs;
import dev.polystack.host.ptrace.TraceEvent;
import dev.polystack.host.ptrace.TraceeControl;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.TracerWakeup;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sampling.CapturedThread;
import dev.polystack.host.sampling.CarriedPeriods;
import dev.polystack.host.sampling.PagePrefetch;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.RegisterConversion;
import dev.polystack.host.sampling.SampleMemory;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.host.sampling.SamplerOutcome;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackCapture;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.TargetCpus;
import dev.polystack.host.sampling.ThreadSample;
import dev.polystack.host.sched.CpuPlacement;
import dev.polystack.host.sys.DiagnosticSwitches;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.unwind.UnwindError;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.plugin.api.Registers;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The ptrace sampling loop. It runs as one task on the target's tracer thread, because every
 * ptrace request must come from the thread that attached. Per tick it stops only the threads it
 * samples, one at a time, for as long as it takes to read registers and walk the stack, and
 * resumes each at once; between ticks it passes on every event (signals, clones, exec, job
 * control) so the target behaves as if untraced. On every way out it detaches all threads.
 */
public final class PtraceSampler {
  /** The ptrace options every thread is seized with, also by a launch and by dump. */
  public static final int OPTIONS = TraceeControl.options(false);

  /** A thread that does not stop within this time (uninterruptible sleep) is skipped. */
  static final long STOP_TIMEOUT_NANOS = 20_000_000;

  static final long REFRESH_INTERVAL_NANOS = 100_000_000L;

  /**
   * Shortest wait until a tick that sleeps in waitpid: a timer that expired before the wait
   * began would leave it to the next period, so waits shorter than this park instead.
   */
  static final long MIN_SLEEP_NANOS = 200_000;

  /** Rounds of {@link #warmUp}: enough for C1 (at the launcher's thresholds) to compile. */
  static final int WARM_UP_ROUNDS = 300;

  /** Walks of the held program's entry stack in {@link #warmUp}. */
  static final int WARM_UP_WALKS = 200;

  private static final int NOT_ON_CPU = -2;
  private static final int UNKNOWN_CPU = -1;

  private static final int CPUS = Runtime.getRuntime().availableProcessors();

  /**
   * How long the wait for a stop polls before it sleeps: a running thread stops within some tens
   * of microseconds of the interrupt, a few hundred when its CPU has to be woken first.
   */
  static final long STOP_SPIN_NANOS = 300_000;

  /**
   * Runtime walks of a session that run after the resume, to learn pages and warm up, instead of
   * while the thread is held. The first runtime walks run cold (the plug-in's classes load and
   * initialise, its code is interpreted), far too long to hold a thread for (measured in
   * docs/benchmarks.md, "Figures behind the code's choices"). Their samples are dropped.
   */
  static final int LEARNING_WALKS = 8;

  /**
   * Whether the wait for a stop may block (see {@link Ptrace#awaitStopBlocking}); only for
   * threads just seen on a CPU. A diagnostic switch for comparing with the polling wait.
   */
  static final boolean BLOCKING_WAIT = DiagnosticSwitches.CURRENT.blockingStopWait();

  /**
   * Whether runtime walks may run after the resume from pages copied while stopped (see {@link
   * PagePrefetch}); a diagnostic switch for comparing with walks inside the stop.
   */
  static final boolean PREFETCH = DiagnosticSwitches.CURRENT.prefetchWalk();

  /**
   * Whether a walk from the copy may read objects that never change (prototypes, strings, trace
   * metadata) live when the copy lacks their page, instead of dropping the sample; a diagnostic
   * switch. Such misses fall on the phases the set has not learned, so dropping them hid short
   * phases (a string.gsub callback between table.sort phases: 1-2% of the samples instead of
   * 3-4%).
   */
  static final boolean STABLE_LIVE = DiagnosticSwitches.CURRENT.stableLiveReads();

  private final TargetProcess target;
  private final SamplingOptions options;
  private final StackWalker walker;
  private final SampleSink sink;
  private final ProcFs proc;
  private final Runnable refreshRequest;
  private final TraceeControl control;
  private final StackCapture capture;
  private final PauseBreakdown breakdown =
      PauseBreakdown.of(DiagnosticSwitches.CURRENT.pauseBreakdown());
  private final PagePrefetch prefetch = new PagePrefetch();
  /** What the next samples carry of ticks not taken or not kept (see {@link CarriedPeriods}). */
  private final CarriedPeriods carry;
  /** Keeps polystack's own threads off the target's CPUs (see {@link CpuPlacement}). */
  private final CpuPlacement placement = CpuPlacement.forThisProcess();
  /** The CPUs the sampled threads ran on in this tick; reused. */
  private final java.util.BitSet targetCpus = new java.util.BitSet();
  /** Raises the tracer while it holds a thread (see {@link HoldPriority}); set on the tracer. */
  private HoldPriority priority;
  /** Ends a blocking wait for a stop with EINTR so its timeout holds; empty: poll instead. */
  private Optional<TracerWakeup> wakeup = Optional.empty();
  /** Threads found on a CPU in the previous tick (see {@link #tick}). */
  private int onCpuLastTick;
  /** Learning walks done so far (see {@link #LEARNING_WALKS}). */
  private int learningWalks;
  /** When the memory map was last re-read here (see {@link #refreshNow}). */
  private long lastRefresh = Long.MIN_VALUE / 2;

  /**
   * @param refreshRequest asks another thread to re-read the target's memory map (after exec, or
   *     when a PC lies outside every known module); it must not block
   */
  public PtraceSampler(TargetProcess target, SamplingOptions options, StackWalker walker,
      SampleSink sink, ProcFs proc, Runnable refreshRequest) {
    this.target = target;
    this.options = options;
    this.carry = new CarriedPeriods(options.periodNanos());
    this.walker = walker;
    this.sink = sink;
    this.proc = proc;
    this.refreshRequest = refreshRequest;
    this.control = new TraceeControl(proc, target.pid(), OPTIONS, new TraceeControl.Hooks() {
      @Override
      public void execed(Ptrace p, int tid) {
        refreshRequest.run(); // its modules changed
      }
    });
    this.capture = new StackCapture(target.hostMemory(), options.stackBytes());
  }

  /**
   * Seizes the target and samples until {@code stop} or its exit. With {@code heldAtExec} the
   * target is a program we launched, already seized and held in its exec stop: it is resumed
   * here, just before the first tick, so that none of it runs unsampled.
   */
  public SamplerOutcome run(Tracer tracer, BooleanSupplier stop, boolean heldAtExec)
      throws SyscallException {
    return tracer.call(p -> loop(p, stop, heldAtExec));
  }

  private SamplerOutcome loop(Ptrace p, BooleanSupplier stop, boolean heldAtExec)
      throws SyscallException {
    boolean byUser = false;
    try {
      // Warm up and let the JIT settle before anything is sampled: a launched program waits for
      // it at its first instruction; an attached one runs on untraced meanwhile (it is seized
      // only afterwards, so its first samples follow at once).
      priority = HoldPriority.forCurrentThread();
      warmUp(p, heldAtExec);
      CompilerSettle.await(stop);
      // Off the target's CPU before it runs: a launched program resumes on the CPU it last ran
      // on, and the first samples' compilation would otherwise preempt it there.
      if (!options.idle()) {
        placement.targetRunsOn(TargetCpus.lastOf(proc, target.pid(), options.threads()),
            System.nanoTime());
      }
      if (heldAtExec) {
        control.resume(p, target.pid(), 0);
      } else if (!control.seizeAll(p)) {
        throw TraceeControl.processGone(target.pid());
      }
      // The blocking wait for a stop is only safe while this timer can cut it short.
      wakeup = TracerWakeup.start();
      long period = options.periodNanos();
      long start = System.nanoTime();
      long end = options.durationNanos() == 0 ? Long.MAX_VALUE : start + options.durationNanos();
      // The first tick one period in, as every later one: a tick at once would stop a launched
      // program in its dynamic loader, whose page faults and mappings delay the stop (measured
      // in docs/benchmarks.md, "Figures behind the code's choices").
      long next = start + period;
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
              sink.lost(HostCounters.LATE_TICK);
            }
            carry.late(missed);
            next += missed * period;
          }
        } else if (wakeup.isPresent() && next - now > MIN_SLEEP_NANOS) {
          // Sleep in waitpid until a tracee reports (passed on at the top of the loop, at once)
          // or the timer ends the wait at the next tick (or within its period, for a stop
          // request): one wake-up per tick, where polling every millisecond for reports cost an
          // idle record 1000 wake-ups a second (docs/benchmarks-host-cost.md).
          wakeup.get().wakeAt(Math.min(Math.min(next, end), now + TracerWakeup.PERIOD_NANOS));
          p.awaitAny(0);
        } else {
          // Wake at the next tick, but at least every millisecond to pass on events promptly.
          LockSupport.parkNanos(Math.min(next - now, 1_000_000));
        }
      }
    } finally {
      placement.close();
      wakeup.ifPresent(TracerWakeup::close);
      wakeup = Optional.empty();
      for (int i = control.detachAll(p); i > 0; i--) {
        sink.lost(HostCounters.DETACH_FAILED);
      }
      breakdown.report().ifPresent(r -> System.err.println("polystack: " + r));
    }
    return new SamplerOutcome(control.exit(), byUser, control.exit() != null);
  }

  /**
   * Before the first tick, runs the calls of the stopped section (ptrace, waitpid, the stack
   * copy) a few hundred times without stopping anything, so that the first samples' pauses are
   * not paid in interpreted Java: in a short run they made the whole p99. The copy reads the
   * start of the first mapped module, which a running target does not notice. A few
   * milliseconds, once.
   */
  private void warmUp(Ptrace p, boolean held) throws SyscallException {
    int pid = target.pid();
    long address = 0;
    for (var m : target.table().modules()) {
      address = m.start();
      break;
    }
    p.warmUp(pid, WARM_UP_ROUNDS);
    // Both kinds of stopped read: the stack alone, and the stack with a runtime's pages (one
    // scattered read, slow in its first calls: docs/benchmarks.md, "Figures behind the code's
    // choices").
    long[] pages = {address & -SampleMemory.PAGE};
    for (int i = 0; i < WARM_UP_ROUNDS && address != 0; i++) {
      capture.copy(address);
      capture.copyWithPages(address, pages);
      capture.snapshotMemory(null);
    }
    for (int i = 0; i < WARM_UP_ROUNDS; i++) {
      priority.hold();
      priority.currentCpu();
      priority.release();
    }
    if (held) {
      // The launched program sits at its first instruction with a real, one-frame stack: walking
      // it compiles the unwinder and loads the executable's and the loader's unwind tables
      // before any of the program runs. Nothing of it becomes a sample.
      Registers regs = RegisterConversion.of(p.getRegs(pid));
      for (int i = 0; i < WARM_UP_WALKS; i++) {
        capture.copy(regs.sp());
        walker.walk(thread(pid, regs, 0, capture.memory(target.hostMemory())), target.table());
      }
    }
  }

  private void tick(Ptrace p) throws SyscallException {
    // More threads wanting a CPU than there are CPUs: an R thread is then likely runnable but
    // not running, and reaches its stop only when the scheduler gets to it; blocking for that
    // would hold up the rest of the tick, so such ticks use the bounded, polling wait.
    boolean block = !options.idle() && BLOCKING_WAIT && wakeup.isPresent()
        && onCpuLastTick <= CPUS;
    int onCpu = 0;
    targetCpus.clear();
    for (int tid : p.tracedThreads()) {
      if (!options.threads().isEmpty() && !options.threads().contains(tid)) {
        continue;
      }
      int cpu = UNKNOWN_CPU;
      if (!options.idle()) {
        cpu = cpuIfOnCpu(tid);
        if (cpu == NOT_ON_CPU) {
          continue;
        }
        if (cpu >= 0) {
          targetCpus.set(cpu);
        }
      }
      onCpu++;
      carry.sampling(tid);
      sampleHeld(p, tid, block, cpu);
    }
    carry.tickDone();
    onCpuLastTick = onCpu;
    placement.targetRunsOn(targetCpus, System.nanoTime());
  }

  /**
   * Thread state from /proc, read before stopping anything (a stopped thread looks idle): the
   * CPU it runs on, or {@link #NOT_ON_CPU}.
   */
  private int cpuIfOnCpu(int tid) {
    try {
      TaskStat stat = proc.forPid(target.pid()).taskStat(tid);
      return stat.state().isOnCpu() ? Math.max(UNKNOWN_CPU, stat.processor()) : NOT_ON_CPU;
    } catch (ProcReadException e) {
      return NOT_ON_CPU;
    }
  }

  /**
   * One sample with the tracer at real-time priority from before the interrupt until the
   * thread is resumed ({@link #sampleOne} drops it right after the resume).
   *
   * @param cpu the CPU the thread was seen running on, or {@link #UNKNOWN_CPU}
   */
  private void sampleHeld(Ptrace p, int tid, boolean block, int cpu) throws SyscallException {
    boolean held = priority.hold();
    try {
      // A real-time tracer that spins keeps a thread on its own CPU from reaching the stop
      // (yielding does not give way to normal threads): spin only for a thread elsewhere.
      boolean spin = !held || cpu != UNKNOWN_CPU && cpu != priority.currentCpu();
      sampleOne(p, tid, block, spin ? STOP_SPIN_NANOS : 0);
    } finally {
      priority.release();
    }
  }

  /**
   * @param block wait for the stop in a blocking waitpid: the thread was just seen on a CPU and
   *     few enough threads want one that it is most likely running, so its stop is imminent
   */
  private void sampleOne(Ptrace p, int tid, boolean block, long spinNanos)
      throws SyscallException {
    long t0 = System.nanoTime();
    breakdown.start(t0);
    try {
      p.interrupt(tid);
    } catch (SyscallException e) {
      if (e.errno() == Errno.ESRCH) {
        sink.lost(HostCounters.THREAD_GONE);
        return;
      }
      throw e;
    }
    breakdown.mark(PauseBreakdown.INTERRUPT);
    WaitStatus stopped = block ? p.awaitStopBlocking(tid, STOP_TIMEOUT_NANOS, spinNanos)
        : p.awaitStop(tid, STOP_TIMEOUT_NANOS);
    if (stopped == null) {
      // Still running (uninterruptible sleep) or gone; the stop, if it comes, is passed on later.
      sink.lost(p.traces(tid) ? HostCounters.STOP_TIMEOUT : HostCounters.THREAD_GONE);
      return;
    }
    TraceEvent event = p.takeEvent(tid);
    breakdown.mark(PauseBreakdown.WAIT);
    if (event == null || !isInterruptStop(event.status())) {
      // Something else happened first (a signal, a clone): pass it on; the interrupt's own stop
      // arrives later and is resumed by the event loop.
      if (event != null) {
        control.handle(p, event);
      }
      sink.lost(HostCounters.RACED_EVENT);
      return;
    }
    // One module table for the decision and the walk: a refresh meanwhile must not hand a
    // plug-in a thread that is already running again.
    ModuleTable table = target.table();
    WalkPlan plan = planFor(tid, table);
    Held held;
    long t1;
    try {
      held = readWhileStopped(p, tid, plan, table);
    } finally {
      control.resume(p, tid, 0);
      t1 = System.nanoTime();
      breakdown.mark(PauseBreakdown.CONT);
      // What follows is the tracer's own work: no precedence over anyone. Dropping to normal
      // priority may let a waiting thread run first; the target already runs, so the pause
      // ends above, at the resume.
      priority.release();
    }
    if (held != null) {
      walkAfterResume(tid, plan, table, held, t1 - t0);
    }
  }

  /**
   * What was read from a stopped thread: its registers, and the stack walked inside the stop
   * ({@link WalkPlan#RUNTIME_STOPPED}) or the frozen copy to walk after the resume
   * ({@link WalkPlan#RUNTIME_FROM_COPY}), else null.
   */
  private record Held(Registers regs, long threadPointer, RawStack stack, SampleMemory snapshot) {}

  /**
   * Reads the stopped thread as {@code plan} says (its caller resumes it); null when it was gone
   * before its registers could be read (counted).
   */
  private Held readWhileStopped(Ptrace p, int tid, WalkPlan plan, ModuleTable table)
      throws SyscallException {
    Registers regs;
    long threadPointer;
    try {
      UserRegs user = p.getRegs(tid);
      regs = RegisterConversion.of(user);
      threadPointer = user.fsBase();
    } catch (SyscallException e) {
      // ESRCH: killed in its stop (another thread's exit_group or exec), its exit follows.
      if (e.errno() != Errno.ESRCH) {
        throw e;
      }
      sink.lost(HostCounters.THREAD_GONE);
      return null;
    }
    breakdown.mark(PauseBreakdown.GETREGS);
    boolean fromCopy = plan == WalkPlan.RUNTIME_FROM_COPY;
    boolean copied = fromCopy ? capture.copyWithPages(regs.sp(), prefetch.pages(tid))
        : capture.copy(regs.sp());
    if (!copied) {
      sink.lost(HostCounters.STACK_COPY_FAILED);
    }
    SampleMemory snapshot =
        fromCopy ? capture.snapshotMemory(STABLE_LIVE ? target.hostMemory() : null) : null;
    breakdown.mark(PauseBreakdown.READ);
    RawStack stack = null;
    if (plan == WalkPlan.RUNTIME_STOPPED) {
      SampleMemory memory = capture.memory(target.hostMemory());
      stack = walker.walk(thread(tid, regs, threadPointer, memory), table);
      prefetch.learned(tid, memory.pagesRead());
      breakdown.count(PauseBreakdown.STOPPED_READS, memory.liveReads());
      breakdown.mark(PauseBreakdown.WALK);
    }
    return new Held(regs, threadPointer, stack, snapshot);
  }

  /** The tracer's work once the thread runs again: the walk the plan left, then the sample. */
  private void walkAfterResume(int tid, WalkPlan plan, ModuleTable table, Held held,
      long pauseNanos) {
    long epochNanos = System.currentTimeMillis() * 1_000_000L;
    RawStack stack;
    switch (plan) {
      case LEARNING:
        learnAfterResume(tid, held, table);
        return;
      case RUNTIME_STOPPED:
        stack = held.stack();
        refreshIfStale(stack);
        break;
      case NATIVE_AFTER_RESUME:
        stack = walkCopy(tid, held, table);
        breakdown.mark(PauseBreakdown.WALK_AFTER);
        break;
      case RUNTIME_FROM_COPY:
        stack = walkFromCopy(tid, held, table);
        if (stack == null) {
          return;
        }
        break;
      default:
        throw new IllegalStateException("walk plan " + plan);
    }
    breakdown.commit();
    sink.accept(new ThreadSample(tid, epochNanos, stack, pauseNanos, carry.take(tid)));
  }

  /**
   * Walks the copy taken while the thread was held; null when the walk needed memory the copy
   * lacks (the sample is dropped and counted, the thread's next one walks stopped).
   */
  private RawStack walkFromCopy(int tid, Held held, ModuleTable table) {
    SampleMemory snapshot = held.snapshot();
    RawStack stack = walker.walk(thread(tid, held, snapshot), table);
    if (stack.endedWith(UnwindError.NO_MODULE) && refreshNow()) {
      // A library mapped since the table was read (libc, loaded after the exec the record
      // started at, met by the first sample): the copy is frozen, so the walk can be redone
      // against the fresh table as if it had been current at the stop.
      stack = walker.walk(thread(tid, held, snapshot), target.table());
    }
    java.util.Set<Long> missed = snapshot.missedPages();
    prefetch.walked(tid, snapshot.pagesRead(), missed);
    breakdown.mark(PauseBreakdown.WALK_AFTER);
    if (!missed.isEmpty()) {
      // Reading now would take from a thread that has moved on: drop it, and the thread's next
      // sample walks stopped and carries this one's period.
      sink.lost(HostCounters.WALK_PAGE_MISSED);
      carry.notKept(tid);
      return null;
    }
    return stack;
  }

  /** How a sample's stack is walked; chosen per sample by {@link #planFor}. */
  private enum WalkPlan {
    /** Native code only: the stack copy is walked after the resume. */
    NATIVE_AFTER_RESUME,
    /** A runtime walk inside the stop, reading the live target. */
    RUNTIME_STOPPED,
    /** A runtime walk after the resume, from the stack and learned pages copied while stopped. */
    RUNTIME_FROM_COPY,
    /** A runtime walk after the resume that learns pages and warms up; its sample is dropped. */
    LEARNING
  }

  /**
   * A runtime plug-in reads its own structures (Lua stack, prototypes, traces), which must be one
   * consistent instant: either its walk stays inside the stop, or the pages it will read are
   * copied with the stack while stopped and it walks that frozen copy afterwards.
   */
  private WalkPlan planFor(int tid, ModuleTable table) {
    if (table.bindings().isEmpty()) {
      return WalkPlan.NATIVE_AFTER_RESUME;
    }
    if (!PREFETCH) {
      return WalkPlan.RUNTIME_STOPPED;
    }
    if (learningWalks < LEARNING_WALKS) {
      return WalkPlan.LEARNING;
    }
    return prefetch.walkStopped(tid) ? WalkPlan.RUNTIME_STOPPED : WalkPlan.RUNTIME_FROM_COPY;
  }

  /**
   * A learning walk: from the stack copy and the live target, which has moved on, so its frames
   * are not kept (counted as {@code learning_walk}); the pages it read become the thread's set,
   * so its next sample is walked from a copy taken while it is held.
   */
  private void learnAfterResume(int tid, Held held, ModuleTable table) {
    SampleMemory memory = capture.memory(target.hostMemory());
    walker.walk(thread(tid, held, memory), table);
    prefetch.learned(tid, memory.pagesRead());
    learningWalks++;
    sink.lost(HostCounters.LEARNING_WALK);
    carry.notKept(tid);
  }

  /**
   * The native walk of a thread that is running again, from its registers and the stack copy.
   * Everything a native unwind reads normally lies in the copy; a read beyond it (a stack deeper
   * than the copy) goes to the live target, which is racy as in perf mode (the unwinder validates
   * every frame it derives), and is counted. The copy stays ours, so a walk that met code in no
   * known module is repeated once the memory map has been re-read.
   */
  private RawStack walkCopy(int tid, Held held, ModuleTable table) {
    SampleMemory memory = capture.memory(target.hostMemory());
    RawStack stack = walker.walk(thread(tid, held, memory), table);
    long lateReads = memory.liveReads();
    if (stack.endedWith(UnwindError.NO_MODULE) && refreshNow()) {
      ModuleTable fresh = target.table();
      if (fresh.bindings().isEmpty()) {
        memory = capture.memory(target.hostMemory());
        stack = walker.walk(thread(tid, held, memory), fresh);
        lateReads += memory.liveReads();
      }
    }
    sink.lost(HostCounters.READ_AFTER_RESUME, lateReads);
    return stack;
  }

  private CapturedThread thread(int tid, Held held, SampleMemory memory) {
    return thread(tid, held.regs(), held.threadPointer(), memory);
  }

  private CapturedThread thread(int tid, Registers regs, long threadPointer,
      SampleMemory memory) {
    return new CapturedThread(target.pid(), tid, regs, memory, capture.start(), capture.length(),
        threadPointer, CapturedThread.NO_PLANS);
  }

  /**
   * A PC in no known module means the map changed (a library loaded after exec, JIT code): re-read
   * it right here, after the thread was resumed, so the next sample already knows it. The helper
   * thread would do it too, but on a busy host it may not run for a long time. Rate-limited.
   */
  private void refreshIfStale(RawStack stack) {
    if (stack.endedWith(UnwindError.NO_MODULE)) {
      refreshNow();
    }
  }

  /** Re-reads the memory map now unless that was done very recently; true if it was re-read. */
  private boolean refreshNow() {
    long now = System.nanoTime();
    if (now - lastRefresh < REFRESH_INTERVAL_NANOS) {
      refreshRequest.run();
      return false;
    }
    lastRefresh = now;
    try {
      target.refresh();
      return true;
    } catch (dev.polystack.host.proc.ProcReadException e) {
      // The process is going away; the event loop notices.
    } catch (RuntimeException e) {
      sink.lost(HostCounters.REFRESH_FAILED);
    }
    return false;
  }

  private static boolean isInterruptStop(WaitStatus st) {
    return TraceeControl.isInterruptStop(st);
  }
}
