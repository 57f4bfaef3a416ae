package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.PlanEncoder;
import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.CapturedThread;
import dev.polystack.host.sampling.CarriedPeriods;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.host.sampling.SamplerOutcome;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.TargetCpus;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sampling.ThreadSample;
import dev.polystack.host.sys.MonotonicClock;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.process.RuntimeBinding;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.sched.CpuPlacement;
import dev.polystack.host.unwind.UnwindError;
import dev.polystack.otel.counters.Counter;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.Registers;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The bpf sampling loop: the kernel captures each tick of the target's threads (registers, the
 * stack, the regions the runtimes' capture plans name) into a ring buffer without stopping
 * them; this loop parses each record and walks it exactly as it walks a stopped thread. One
 * {@link TickCapture} serves the process through a tgid entry, so threads created later are
 * covered from their first tick, with no per-thread events or /proc scans.
 */
public final class BpfSampler implements NoStopSampler {
  /** How often plans are re-asked and the target's exit checked. */
  static final long HOUSEKEEPING_NANOS = 100_000_000L;
  /** How often the kernel's counters are read (and once at the end, which makes them exact). */
  static final long KERNEL_COUNTERS_NANOS = 1_000_000_000L;
  /** The ring holds ~1 s of records of 2 CPUs at 99 Hz with 16 KiB stacks; enough at any rate. */
  static final int RING_BYTES = 8 << 20;
  /** Most plans a process runs at the tick (the capture program's bound). */
  static final int MAX_PLANS = 4;
  /** Records held for a refresh; beyond this they are kept with their no_module frame. */
  static final int MAX_DEFERRED = 256;

  private final TargetProcess target;
  private final SamplingOptions options;
  private final StackWalker walker;
  private final SampleSink sink;
  private final Runnable refreshRequest;
  private final PluginGuard guard;
  private final CaptureSource capture;
  private final long epochOffset = MonotonicClock.epochOffsetNanos();
  private final CpuPlacement placement = CpuPlacement.forThisProcess();
  /** Where the target ran lately, for the placement. */
  private final RecentTargetCpus targetCpus;
  /** Kernel counters as last read; they count from the capture's load, shared by sessions. */
  private final Map<String, Long> kernelSeen = new HashMap<>();
  /** Records parsed out of the ring in one poll, walked once the ring has its space back. */
  private final List<CaptureRecord> batch = new ArrayList<>();
  /** Records whose walk met a PC in no known module, waiting for the next map refresh. */
  private final List<CaptureRecord> deferred = new ArrayList<>();
  private List<CapturePlan> plans = List.of();
  /** Pages walks read beyond the plans; copied at the tick too (the last plan slot). */
  private final LearnedPages learned = new LearnedPages();
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
  private long countersRead = System.nanoTime();

  public BpfSampler(TargetProcess target, SamplingOptions options, StackWalker walker,
      SampleSink sink, Runnable refreshRequest, PluginGuard guard, CaptureSource capture) {
    this.target = target;
    this.options = options;
    this.walker = walker;
    this.sink = sink;
    this.refreshRequest = refreshRequest;
    this.guard = guard;
    this.capture = capture;
    this.carried = new CarriedPeriods(options.periodNanos());
    this.syncRefresh = new PollLoop.SyncRefresh(target);
    // 8 periods (>= 50 ms): on a loaded host a CPU can go a couple of periods without a tick.
    this.targetCpus = new RecentTargetCpus(Math.max(50_000_000L, 8 * options.periodNanos()),
        Runtime.getRuntime().availableProcessors());
  }

  @Override
  public void openAll() throws SamplingException {
    updatePlans();
    try {
      capture.addTarget(target.pid(), PerfSampler.stackBytes(options));
    } catch (RuntimeException e) {
      throw new SamplingException("cannot sample process " + target.pid() + " in bpf mode: "
          + e.getMessage());
    }
  }

  @Override
  public void placeBeforeStart(ProcFs proc) {
    placement.targetRunsOn(TargetCpus.lastOf(proc, target.pid(), options.threads()),
        System.nanoTime());
  }

  @Override
  public SamplerOutcome run(BooleanSupplier stop, TargetExit exit) throws SyscallException {
    PollLoop.Ended ended = PollLoop.run(options, HOUSEKEEPING_NANOS, stop, exit,
        new PollLoop.Body() {
          @Override
          public void poll(int timeoutMillis) {
            drain(timeoutMillis);
            walkDeferred(false);
          }

          @Override
          public void afterPoll(long nowNanos) {
            placement.targetRunsOn(targetCpus.at(nowNanos), nowNanos);
          }

          @Override
          public void housekeeping() {
            updatePlans();
            long now = System.nanoTime();
            if (now - countersRead >= KERNEL_COUNTERS_NANOS) {
              countersRead = now;
              countKernelLosses();
            }
          }
        });
    capture.removeTarget(target.pid());
    drain(0); // what the kernel wrote before the end still counts
    walkDeferred(true);
    held.forEach(h -> accept(h.record(), h.stack())); // no record with a plan came after them
    held.clear();
    countKernelLosses();
    placement.close();
    return new SamplerOutcome(exit.status(), ended.byUser(), ended.targetGone(), counters());
  }

  /** Copies the ready records out of the ring first, so the kernel gets the space back early. */
  private void drain(int timeoutMillis) {
    batch.clear();
    capture.poll(timeoutMillis, batch::add, () -> sink.lost(HostCounters.MALFORMED_RECORD));
    for (CaptureRecord r : batch) {
      sample(r);
    }
    if (!batch.isEmpty() && plans.isEmpty()) {
      updatePlans(); // the first plan as soon as a walk found what it needs
    }
    batch.clear();
  }

  private void sample(CaptureRecord r) {
    if (r.tgid() != target.pid()) {
      return; // another session's process, or this one's from before a restart
    }
    if (!options.threads().isEmpty() && !options.threads().contains(r.tid())) {
      return;
    }
    targetCpus.ticked(r.cpu(), r.tid(), r.monotonicNanos());
    TickMemory memory = new TickMemory(r, target.hostMemory());
    RawStack stack = walk(r, memory);
    boolean beforePlan = r.planStops().length == 0 && memory.uncapturedReads() > 0 && learning();
    if (beforePlan && (!stack.errors().isEmpty() || !hold(r, stack))) {
      // The runtime's state was read after the tick, not captured at it (the plan was not
      // installed yet when the kernel took this record), and the walk went wrong on it: its
      // time goes to the thread's next sample.
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
        stack = walk(r, new TickMemory(r, target.hostMemory())); // the record is ours
      } else if (deferred.size() < MAX_DEFERRED) {
        deferred.add(r); // walked again after the next refresh (new JIT code, a dlopen)
        return;
      }
    }
    accept(r, stack);
  }

  /**
   * Holds a sample walked right from memory read after the tick, until it is known whether
   * records with the plan follow: they do within a few walks on a normal run, and the held ones
   * are then dropped (they see the runtime later than the tick, as perf mode does); on a run
   * shorter than the first walks they never come, and the held samples are all there is.
   * False when the hold is full.
   */
  private boolean hold(CaptureRecord r, RawStack stack) {
    if (held.size() >= Math.max(64, options.rateHz() * targetCpus.cpus())) {
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

  private void accept(CaptureRecord r, RawStack stack) {
    sink.accept(new ThreadSample(r.tid(), r.monotonicNanos() + epochOffset, stack, 0,
        carried.take(r.tid())));
  }

  /**
   * Whether records taken without a plan are still from before the plan: a runtime that
   * declares plans has one now, or is expected to within its first second of samples (its
   * walks learn what the plan needs). A runtime that never offers one is sampled as in perf
   * mode rather than not at all.
   */
  private boolean learning() {
    if (!plans.isEmpty()) {
      return true;
    }
    return learningDrops < options.rateHz() && target.table().bindings().stream()
        .anyMatch(b -> b.plugin().descriptor().capabilities().contains(Capability.CAPTURE_AT_TICK));
  }

  /**
   * Walks the records that met code no module explained once the map was read again: a walk
   * from a record gives the same answer later, bar stable objects freed meanwhile.
   */
  private void walkDeferred(boolean atEnd) {
    if (deferred.isEmpty()) {
      return;
    }
    boolean refreshed = atEnd ? syncRefresh.force() : syncRefresh.now();
    if (!refreshed && !atEnd) {
      return;
    }
    for (CaptureRecord r : deferred) {
      accept(r, walk(r, new TickMemory(r, target.hostMemory())));
    }
    deferred.clear();
  }

  private RawStack walk(CaptureRecord r, TickMemory memory) {
    Registers regs = Registers.of(r.regs());
    RawStack stack = walker.walk(new CapturedThread(target.pid(), r.tid(), regs, memory,
        r.stackStart(), r.stack().length), target.table());
    if (memory.uncapturedReads() > 0) {
      // With plans installed these are what they missed; without, every runtime read.
      uncapturedSamples++;
      learned.walked(memory.uncapturedPages());
    }
    return stack;
  }

  /**
   * Asks every runtime instance for its capture plan and installs the plans that changed, with
   * the pages the walks keep needing beyond them ({@link LearnedPages}). A plan typically
   * appears after the first walks, once the plug-in found its runtime's state.
   */
  private void updatePlans() {
    List<CapturePlan> wanted = new ArrayList<>();
    for (RuntimeBinding b : target.table().bindings()) {
      if (!b.plugin().descriptor().capabilities().contains(Capability.CAPTURE_AT_TICK)) {
        continue;
      }
      CapturePlan plan = guard.call(b.plugin(), "capturePlan", b.instance()::capturePlan)
          .orElse(CapturePlan.NONE);
      if (!plan.isEmpty() && wanted.size() < MAX_PLANS - 1 && !wanted.contains(plan)) {
        wanted.add(plan);
      }
    }
    if (!target.table().bindings().isEmpty()) {
      // Only for runtimes: a native walk's reads beyond the stack copy are stable code.
      CapturePlan pages = learned.plan();
      if (!pages.isEmpty()) {
        wanted.add(pages);
      }
    }
    if (wanted.equals(plans)) {
      return;
    }
    try {
      capture.clearPlans(target.pid());
      for (int i = 0; i < wanted.size(); i++) {
        capture.setPlan(target.pid(), i, PlanEncoder.encode(wanted.get(i)));
      }
      plans = List.copyOf(wanted);
    } catch (RuntimeException e) {
      sink.lost(HostCounters.CAPTURE_PLAN_REFUSED);
    }
  }

  private void countKernelLosses() {
    Map<String, Long> now = capture.counters();
    for (Map.Entry<String, Long> e : now.entrySet()) {
      long before = kernelSeen.getOrDefault(e.getKey(), 0L);
      long delta = e.getValue() - before;
      kernelSeen.put(e.getKey(), e.getValue());
      Counter counter = HostCounters.kernel(e.getKey());
      if (delta > 0 && counter.isLoss()) {
        sink.lost(counter, delta);
      }
    }
  }

  /**
   * What the capture did, for the summary beside the losses: the kernel's counters since this
   * sampler started (capture_ticks, capture_records, capture_plan_check_failed, ...) and the
   * samples whose walk read memory after the tick because no plan had copied it.
   */
  private Map<String, Long> counters() {
    Map<String, Long> out = new java.util.TreeMap<>();
    kernelSeen.forEach((k, v) -> {
      Counter counter = HostCounters.kernel(k);
      if (v > 0 && !counter.isLoss()) {
        out.put(counter.name(), v);
      }
    });
    if (uncapturedSamples > 0) {
      out.put(HostCounters.CAPTURE_LIVE_READ_SAMPLES.name(), uncapturedSamples);
    }
    if (!plans.isEmpty()) {
      out.put(HostCounters.CAPTURE_PLANS.name(), (long) plans.size());
    }
    return out;
  }

  /**
   * The tick capture for a bpf-mode run, or null when bpf mode was only the default
   * ({@code fallback}) and cannot load: then perf mode it is, with one line saying why. One copy
   * for a record of one process and of several, so both fall back alike.
   */
  public static TickCapture openCapture(int rateHz, boolean fallback, Consumer<String> warn)
      throws SamplingException {
    String why = BpfSupport.unavailableReason().orElse(null);
    if (why == null) {
      try {
        return TickCapture.open(rateHz, RING_BYTES);
      } catch (BpfLoadException e) {
        why = e.getMessage();
      }
    }
    if (!fallback) {
      throw new SamplingException("cannot sample in bpf mode: " + why
          + "; use --mode perf or --mode ptrace");
    }
    warn.accept("bpf mode unavailable (" + why + "); sampling in perf mode instead");
    return null;
  }

  /**
   * A shared capture's kernel counters as a run's losses and figures, by their declared names
   * (as one sampler reports its own capture's).
   */
  public static Map<String, Long> kernelFigures(Map<String, Long> counters) {
    Map<String, Long> out = new java.util.TreeMap<>();
    counters.forEach((k, v) -> {
      if (v > 0) {
        out.put(HostCounters.kernel(k).name(), v);
      }
    });
    return out;
  }

  @Override
  public void close() {
    placement.close();
    try {
      capture.removeTarget(target.pid());
    } catch (RuntimeException e) {
      // the capture is closed with the session; nothing of this process is left to remove
    }
  }
}
