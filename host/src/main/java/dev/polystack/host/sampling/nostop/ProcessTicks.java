package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.CapturedThread;
import dev.polystack.host.sampling.CarriedPeriods;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.SampleMemory;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.ThreadSample;
import dev.polystack.host.sys.MonotonicClock;
import dev.polystack.host.unwind.UnwindError;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Registers;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The walk of one process's tick records, for the host-wide pipeline: each record is walked exactly as a stopped thread is; the
 * runtimes' capture plans are kept installed; records taken before a plan existed, or whose PC
 * no module explained yet, are held and settled as {@link #accept} describes. Not thread-safe:
 * one reader thread drives it.
 */
public final class ProcessTicks {
  /** Most plans a process runs at the tick (the capture program's bound). */
  static final int MAX_PLANS = 4;
  /** Records held for a refresh; beyond this they are kept with their no_module frame. */
  static final int MAX_DEFERRED = 256;

  /** Where a process's capture plans are installed. */
  public interface PlanSlots {
    /** An engine that runs no program at the tick (perf): records are walked as they come. */
    PlanSlots NONE = new PlanSlots() {
      @Override
      public void clearPlans(int pid) {}

      @Override
      public void setPlan(int pid, int index, byte[] encodedPlan) {
        throw new IllegalStateException("this capture runs no plan");
      }
    };

    void clearPlans(int pid);

    void setPlan(int pid, int index, byte[] encodedPlan);

    /** The plan slots of a tick capture's programs. */
    static PlanSlots of(dev.polystack.host.bpf.TickCapture capture) {
      return new PlanSlots() {
        @Override
        public void clearPlans(int pid) {
          capture.clearPlans(pid);
        }

        @Override
        public void setPlan(int pid, int index, byte[] encodedPlan) {
          capture.setPlan(pid, index, encodedPlan);
        }
      };
    }
  }

  private final TargetProcess target;
  private final SamplingOptions options;
  private final StackWalker walker;
  private final SampleSink sink;
  private final Runnable refreshRequest;
  private final PluginGuard guard;
  private final PlanSlots slots;
  private final int cpus;
  private final long epochOffset = MonotonicClock.epochOffsetNanos();
  /** Records whose walk met a PC in no known module, waiting for the next map refresh. */
  private final List<CaptureRecord> deferred = new ArrayList<>();
  private List<CapturePlan> plans = List.of();
  private final RuntimePlans runtimePlans;
  /** Pages walks read beyond the plans; copied at the tick too (the last plan slot). */
  private final LearnedPages learned = new LearnedPages();
  /** For records walked after the process exited (see {@link LastLivePages}). */
  private final LastLivePages lastLive = new LastLivePages();
  /** Stable reads of the current batch's records (see {@link TickMemory#stablePages}). */
  private SampleMemory batchStable;
  /** Records walked as {@link #acceptReplaced} walks them. */
  private long replacedWalks;
  /** Ticks of each thread not kept (taken before the plan), carried by its next sample. */
  private final CarriedPeriods carried;

  /** A sample walked from live memory before the plan, see {@link #hold}. */
  private record Held(CaptureRecord record, RawStack stack) {}

  private final List<Held> held = new ArrayList<>();
  /** Records not kept for want of a plan so far. */
  private long learningDrops;
  /** Samples whose walk read memory the capture did not copy (from the live process). */
  private long uncapturedSamples;
  private final PollLoop.SyncRefresh syncRefresh;

  /**
   * @param refreshRequest asks for the memory map to be read again soon; never blocks
   * @param cpus CPUs that tick (bounds the records held before the first plan)
   */
  public ProcessTicks(TargetProcess target, SamplingOptions options, StackWalker walker,
      SampleSink sink, Runnable refreshRequest, PluginGuard guard, PlanSlots slots, int cpus) {
    this.target = target;
    this.options = options;
    this.walker = walker;
    this.sink = sink;
    this.refreshRequest = refreshRequest;
    this.guard = guard;
    this.slots = slots;
    this.cpus = Math.max(1, cpus);
    this.carried = new CarriedPeriods(options.periodNanos());
    this.syncRefresh = new PollLoop.SyncRefresh(target);
    this.runtimePlans = new RuntimePlans(target.pid(), target::warn);
  }

  public TargetProcess target() {
    return target;
  }

  /**
   * Walks one record of this process and hands the sample to the sink, or holds it: a record
   * taken before the runtime's plan was installed read the runtime's state after the tick, so
   * it is kept only if no record with a plan follows; a record whose PC no module explains waits
   * for a map refresh (new JIT code, a dlopen).
   */
  public void accept(CaptureRecord r) {
    if (!wanted(r)) {
      return;
    }
    TickMemory memory = tickMemory(r);
    RawStack stack = walk(r, memory);
    boolean beforePlan = r.planStops().length == 0 && memory.uncapturedReads() > 0 && learning();
    if (beforePlan && (!stack.errors().isEmpty() || !hold(r, stack))) {
      // The runtime's state was read after the tick and the walk went wrong on it: its time
      // goes to the thread's next sample.
      notKept(r.tid());
      return;
    }
    if (beforePlan) {
      return; // held: kept only if no record with a plan follows (see hold)
    }
    if (r.planStops().length > 0 && !held.isEmpty()) {
      // Records from the tick follow: the ones read live are not kept, their time carried.
      held.forEach(h -> notKept(h.record().tid()));
      held.clear();
    }
    if (stack.endedWith(UnwindError.NO_MODULE)) {
      refreshRequest.run();
      if (syncRefresh.now()) {
        stack = walk(r, tickMemory(r)); // the record is ours
      } else if (deferred.size() < MAX_DEFERRED) {
        deferred.add(r);
        return;
      }
    }
    emit(r, stack);
  }

  /**
   * Walks a record that is no tick (the stack of a sampled allocation) as a tick is walked, and
   * hands the stack back instead of a sample.
   */
  public RawStack walkStack(CaptureRecord r) {
    RawStack stack = walk(r, tickMemory(r));
    if (stack.endedWith(UnwindError.NO_MODULE) && syncRefresh.now()) {
      stack = walk(r, tickMemory(r)); // a library since
    }
    return stack;
  }

  /** After a batch of records: the first plan as soon as a walk found what it needs. */
  public void afterBatch(boolean hadRecords) {
    batchStable = null;
    if (hadRecords && plans.isEmpty()) {
      updatePlans();
    }
    walkDeferred(false);
  }

  /** Keeps the plans current (a runtime's plan appears after its first walks). */
  public void housekeeping() {
    updatePlans();
  }

  /**
   * A runtime that captures at the tick has no plan yet: its records are walked on live memory
   * until one is installed, so they are best read soon after their tick.
   */
  public boolean awaitingPlan() {
    return plans.isEmpty() && learning();
  }

  /**
   * A record of this program taken before the process ran another: walked from what the tick
   * copied and the pages stable reads last found, never from the process's memory, which is the
   * next program's now. A read neither holds fails, and the walk says so with an error frame.
   */
  public void acceptReplaced(CaptureRecord r) {
    if (!wanted(r)) {
      return;
    }
    replacedWalks++;
    ProcessMemory alone = lastLive.alone();
    emit(r, walk(r, new TickMemory(r, alone, TickMemory.stablePages(alone, lastLive))));
  }

  /** Whether the record's thread is one the user chose (all when none was named). */
  private boolean wanted(CaptureRecord r) {
    return options.threads().isEmpty() || options.threads().contains(r.tid());
  }

  /** Settles what is held, at the end of the process's sampling. */
  public void finish() {
    finish(false);
  }

  /**
   * Settles what is held, at the end of the process's sampling.
   *
   * @param imageReplaced it exec'd: deferred records are walked as {@link #acceptReplaced} does,
   *     without the map refresh that would describe the next program
   */
  public void finish(boolean imageReplaced) {
    batchStable = null;
    if (imageReplaced) {
      deferred.forEach(this::acceptReplaced);
      deferred.clear();
    }
    walkDeferred(true);
    held.forEach(h -> emit(h.record(), h.stack())); // no record with a plan came after them
    held.clear();
  }

  /** What the walk did beyond samples: live reads, plans installed (capture_* figures). */
  public Map<String, Long> figures() {
    Map<String, Long> out = new TreeMap<>();
    if (uncapturedSamples > 0) {
      out.put(HostCounters.CAPTURE_LIVE_READ_SAMPLES.name(), uncapturedSamples);
    }
    if (!plans.isEmpty()) {
      out.put(HostCounters.CAPTURE_PLANS.name(), (long) plans.size());
    }
    if (lastLive.served() > 0) {
      out.put(HostCounters.CAPTURE_KEPT_PAGE_READS.name(), lastLive.served());
    }
    if (replacedWalks > 0) {
      out.put(HostCounters.CAPTURE_AFTER_EXEC_WALKS.name(), replacedWalks);
    }
    return out;
  }

  private boolean hold(CaptureRecord r, RawStack stack) {
    if (held.size() >= Math.max(64, options.rateHz() * cpus)) {
      return false;
    }
    held.add(new Held(r, stack));
    return true;
  }

  private void notKept(int tid) {
    sink.lost(HostCounters.LEARNING_WALK);
    carried.notKept(tid);
    learningDrops++;
  }

  /** The record's memory: its capture, then the live process; stable reads cached per batch. */
  private TickMemory tickMemory(CaptureRecord r) {
    if (batchStable == null) {
      batchStable = TickMemory.stablePages(target.hostMemory(), lastLive);
    }
    return new TickMemory(r, target.hostMemory(), batchStable);
  }

  private void emit(CaptureRecord r, RawStack stack) {
    sink.accept(new ThreadSample(r.tid(), r.monotonicNanos() + epochOffset, stack, 0,
        carried.take(r.tid())));
  }

  /**
   * Whether records taken without a plan are still from before the plan: a runtime that
   * declares plans has one now, or is expected to within its first second of samples. A runtime
   * that never offers one is sampled as in perf mode rather than not at all.
   */
  private boolean learning() {
    if (slots == PlanSlots.NONE) {
      return false;
    }
    if (!plans.isEmpty()) {
      return true;
    }
    return learningDrops < options.rateHz() && target.table().bindings().stream()
        .anyMatch(b -> b.plugin().descriptor().capabilities().contains(Capability.CAPTURE_AT_TICK));
  }

  private void walkDeferred(boolean atEnd) {
    if (deferred.isEmpty()) {
      return;
    }
    boolean refreshed = atEnd ? syncRefresh.force() : syncRefresh.now();
    if (!refreshed && !atEnd) {
      return;
    }
    for (CaptureRecord r : deferred) {
      emit(r, walk(r, tickMemory(r)));
    }
    deferred.clear();
  }

  private RawStack walk(CaptureRecord r, TickMemory memory) {
    Registers regs = Registers.of(r.regs());
    RawStack stack = walker.walk(new CapturedThread(target.pid(), r.tid(), regs, memory,
        r.stackStart(), r.stack().length, r.threadPointer(), PlanOutcomes.of(r, plans)),
        target.table());
    if (memory.uncapturedReads() > 0) {
      uncapturedSamples++;
      learned.walked(memory.uncapturedPages());
    }
    return stack;
  }

  /**
   * Asks every runtime instance for its capture plan and installs the plans that changed, with
   * the pages the walks keep needing beyond them ({@link LearnedPages}).
   */
  private void updatePlans() {
    if (slots == PlanSlots.NONE) {
      return;
    }
    List<CapturePlan> wanted = new ArrayList<>(
        runtimePlans.select(RuntimePlans.candidates(target, guard), sink));
    if (!target.table().bindings().isEmpty()) {
      // Only for runtimes: a native walk's reads beyond the stack copy are stable code.
      CapturePlan pages = learned.plan();
      if (!pages.isEmpty()) {
        wanted.add(pages);
      }
    }
    plans = RuntimePlans.install(slots, target.pid(), wanted, plans, sink);
  }
}
