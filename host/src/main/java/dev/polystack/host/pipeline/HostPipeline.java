package dev.polystack.host.pipeline;

import dev.polystack.host.alloc.AllocatorSites;
import dev.polystack.host.bpf.AllocRecord;
import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.ProcessEvent;
import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.process.RuntimeInspections;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.TargetDescriber;
import dev.polystack.host.sampling.ThreadSample;
import dev.polystack.host.sampling.nostop.ProcessTicks;
import dev.polystack.host.session.SampleProcessor;
import dev.polystack.host.session.TargetCpuClock;
import dev.polystack.host.sys.NativeHeap;
import dev.polystack.otel.counters.Counter;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.TargetInfo;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The host-wide pipeline: one {@link CaptureEngine} for every selected process, one process
 * table keyed by pid (each entry validated by its {@link ProcessIdentity}), one walk stage
 * ({@link ProcessTicks} per process, on this one thread), and one sink that takes every
 * interval's profiles, one per process. Processes are described when first seen (a tick; in a
 * record also an exec or followed fork: the kernel says so, nothing rescans /proc) and released
 * when they exit.
 *
 * <p>Everything it holds is bounded: {@link PipelineOptions#maxProcesses} described processes
 * (the one ticked least recently is let go first), {@link PipelineOptions#maxIntervalSamples}
 * samples per interval; what does not fit is counted.
 */
public final class HostPipeline {
  /**
   * Longest wait on the ring while nothing is settling: bounds how late a stop or a cut is
   * noticed. The kernel wakes the reader early only when the ring is a quarter full (each
   * wake-up costs the host a context switch, on a VM a timer exit: docs/benchmarks-host-cost.md).
   */
  static final int POLL_MILLIS = 250;
  /** A record's: its stop and the status line are noticed within this. */
  static final int RECORD_POLL_MILLIS = 100;
  /**
   * While a process settles (a chosen one for its first second; any whose runtime waits for its
   * first plan): records are read soon after their tick, so the walks that find the runtime's
   * state are not of stale memory and its plan follows them at once.
   */
  static final int SETTLE_POLL_MILLIS = 10;
  static final long SETTLE_NANOS = 1_000_000_000L;
  /**
   * After an exec, host-wide, with an engine that does not wake the reader at a program's first
   * tick: how soon records are read, and for how long, so a new program is described at its
   * first tick while it still runs (it is not described at its exec: most programs a host
   * starts never get a tick; docs/benchmarks.md, "The agent").
   */
  static final int EXEC_POLL_MILLIS = 100;
  static final long EXEC_WATCH_NANOS = 500_000_000L;
  /** After this many empty polls in a row the reader waits {@link #IDLE_POLL_MILLIS}. */
  static final int IDLE_POLLS = 5;
  static final int IDLE_POLL_MILLIS = 500;
  /** How often plans and map refreshes are looked after, for processes that ticked. */
  static final long HOUSEKEEPING_NANOS = 100_000_000L;
  /** How long after its description a process's allocator is looked for again. */
  static final long ALLOCATOR_WAIT_NANOS = 2_000_000_000L;
  /** A process not ticked for this many intervals has its identity checked at the cut. */
  static final int IDLE_INTERVALS = 3;
  /**
   * A process not ticked for this long is let go (described again if it runs): memory follows
   * the processes that run, not every process that ever ran (docs/benchmarks.md, "The agent").
   */
  static final long IDLE_RELEASE_NANOS = 60_000_000_000L;
  /**
   * How often the C heap's free memory is returned to the kernel: the JIT compiler and native
   * libraries free memory that glibc would keep resident (see {@link NativeHeap}).
   */
  static final long TRIM_NANOS = 60_000_000_000L;
  /** Parsed files kept beyond those described processes hold. */
  static final int CACHED_FILES = 64;

  /** What to do once the engine runs, before the first poll (e.g. launch a command). */
  public interface Start {
    /** @param select selects one more process (with the pipeline's follow rule) */
    void started(java.util.function.IntConsumer select)
        throws dev.polystack.host.sampling.SamplingException;
  }

  /** Takes each interval's profiles; runs on the pipeline's thread and must not block. */
  public interface Sink {
    void interval(List<ProcessProfile> profiles, PipelineStats stats, boolean last);
  }

  private final ProcFs proc;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;
  private final PipelineOptions options;
  private final SamplingOptions sampling;
  private final ModuleOpener modules = new ModuleOpener(CACHED_FILES);
  private final RuntimeInspections inspections =
      new RuntimeInspections(RuntimeInspections.CAPACITY);
  private final ModuleHashes hashes = new ModuleHashes();
  private final StackWalker walker;
  private final ProcessResource resources;
  private final int self = (int) ProcessHandle.current().pid();
  /** Read once: in a container the JVM answers from the cgroup's files at every call. */
  private final int cpus = Runtime.getRuntime().availableProcessors();
  private final Map<Integer, TrackedProcess> table = new HashMap<>();
  /** In a selection, the selected processes not seen to exit yet. */
  private final Set<Integer> selected = new java.util.HashSet<>();
  private final List<TrackedProcess> retired = new ArrayList<>();
  /** Processes not to describe again until they exec or exit (gone, refused, unreadable). */
  private final Map<Integer, Long> unreadable = new HashMap<>();
  /**
   * When each recently exited process's exit event came (monotonic): a tick taken before it but
   * read after it belongs to the gone process, not to a new one to describe from a zombie.
   */
  private final Map<Integer, Long> exitedAt;
  /** When each process of the batch being read ran a new program, until its exec is handled. */
  private final Map<Integer, Long> execAt;
  private final Map<String, Long> losses = new TreeMap<>();
  /** Losses and errors of released processes, so the totals stay cumulative. */
  private final Map<String, Long> releasedLosses = new TreeMap<>();
  private final Map<String, Long> releasedErrors = new TreeMap<>();
  private long releasedSamples;
  private long processesSeen;
  /** Processes gone or unreadable when they were to be described (short-lived programs). */
  private long notDescribed;
  /** Processes let go to stay within the bound (described again if they run). */
  private long evicted;
  private long intervalSamples;
  /** Polls short until then (see {@link #SETTLE_POLL_MILLIS}). */
  private long settleUntil;
  /** Polls shortish until then (see {@link #EXEC_POLL_MILLIS}). */
  private long execWatchUntil;
  private int emptyPolls;
  private Map<String, Long> kernel = Map.of();
  private CaptureEngine engine;
  /** The engine selects processes itself (host-wide, or a cgroup at each tick). */
  private boolean kernelSelects;

  public HostPipeline(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn, PipelineOptions options) {
    this.proc = proc;
    this.plugins = plugins;
    this.guard = guard;
    this.warn = warn;
    this.options = options;
    this.sampling = options.sampling();
    this.exitedAt = BoundedMap.oldestFirst(Math.max(1, options.maxProcesses()));
    this.execAt = BoundedMap.oldestFirst(Math.max(1, options.maxProcesses()));
    this.walker = new StackWalker(options.maxDepth(), guard);
    this.resources = ProcessResource.forThisHost(proc, options.commandLine());
  }

  /** The bpf engine for {@code options}: host-wide, or the selected processes and events. */
  public static CaptureEngine bpfEngine(PipelineOptions options) {
    ProcessSelection s = options.selection();
    int self = (int) ProcessHandle.current().pid();
    TickCapture.Cgroup cgroup = s.kernelCgroup().orElse(null);
    return new BpfEngine(options.rateHz(), new TickCapture.Settings(
        s.isHostWide() || cgroup != null, self, options.stackBytes(), true,
        s.byName() && cgroup == null, cgroup), options.allocMeanBytes());
  }

  /**
   * The perf engine for {@code options}: per-CPU events, whose samples of processes not selected
   * are dropped in polystack (not in the kernel, as bpf does).
   */
  public static CaptureEngine perfEngine(PipelineOptions options) {
    ProcessSelection s = options.selection();
    return new PerfEngine(options.rateHz(), options.stackBytes(), s.isHostWide(), s.byName());
  }

  /**
   * Starts {@code engine} and runs until {@code stop} says so or {@code durationNanos} (0: no
   * end) passed, handing {@code sink} one batch every {@code interval} and a last one at the end.
   * The engine is closed on return.
   */
  public void run(CaptureEngine engine, Duration interval, long durationNanos,
      BooleanSupplier stop, Sink sink) throws CaptureEngine.EngineException {
    try {
      run(engine, interval, durationNanos, stop, sink, select -> { });
    } catch (dev.polystack.host.sampling.SamplingException e) {
      throw new IllegalStateException(e); // no start hook, nothing throws it
    }
  }

  /**
   * {@link #run(CaptureEngine, Duration, long, BooleanSupplier, Sink)} that calls {@code start}
   * once the engine runs and the running processes are selected, before the first poll.
   */
  public void run(CaptureEngine engine, Duration interval, long durationNanos,
      BooleanSupplier stop, Sink sink, Start onStart)
      throws CaptureEngine.EngineException, dev.polystack.host.sampling.SamplingException {
    long intervalNanos = interval.toNanos();
    if (intervalNanos <= 0) {
      throw new IllegalArgumentException("interval must be positive");
    }
    this.engine = engine;
    this.kernelSelects = options.selection().isHostWide() || engine.selectsInKernel();
    selectRunning(); // before the engine's events exist: no tick of theirs is missed
    engine.start();
    Placement placement = options.record() ? new Placement(options) : null;
    try {
      if (options.record()) {
        for (int pid : List.copyOf(selected)) {
          describeNow(pid);
        }
      } else if (options.allocations()) {
        for (int pid : List.copyOf(selected)) {
          if (!table.containsKey(pid)) {
            track(pid); // probed now: allocations come without ticks
          }
        }
      }
      long start = System.nanoTime();
      long end = durationNanos == 0 ? Long.MAX_VALUE : start + durationNanos;
      onStart.started(pid -> {
        select(pid);
        if (options.record()) {
          describeNow(pid);
        }
      });
      NativeHeap.trim(); // what loading the capture freed (libbpf's parse of the kernel's BTF)
      long fromEpoch = epochNow();
      long nextCut = start + intervalNanos;
      long nextHousekeeping = start + HOUSEKEEPING_NANOS;
      long nextTrim = start + TRIM_NANOS;
      List<TrackedProcess> batch = new ArrayList<>();
      CaptureEngine.Listener listener = listener(batch, placement);
      while (!stop.getAsBoolean()) {
        long now = System.nanoTime();
        if (now >= end) {
          break;
        }
        long until = Math.min(end, nextCut);
        engine.poll((int) Math.max(0, Math.min(pollMillis(now),
            (until - now + 999_999) / 1_000_000)), listener);
        emptyPolls = batch.isEmpty() ? Math.min(emptyPolls + 1, IDLE_POLLS) : 0;
        afterBatch(batch);
        now = System.nanoTime();
        if (placement != null) {
          placement.place(now);
        }
        if (now >= nextHousekeeping) {
          nextHousekeeping = now + HOUSEKEEPING_NANOS;
          housekeeping(now);
        }
        if (now >= nextCut) {
          nextCut = now + intervalNanos;
          long to = epochNow();
          cut(sink, fromEpoch, to, false, now, intervalNanos);
          fromEpoch = to;
        }
        if (now >= nextTrim) {
          nextTrim = now + TRIM_NANOS;
          NativeHeap.trim();
        }
      }
      engine.poll(0, listener); // what the kernel wrote before the end still counts
      afterBatch(batch);
      for (TrackedProcess p : table.values()) {
        p.ticks().finish();
        if (p.cpu != null) {
          p.cpu.read(true); // still running: its CPU time up to the end (an exited one's stands)
        }
      }
      cut(sink, fromEpoch, epochNow(), true, System.nanoTime(), intervalNanos);
    } finally {
      for (TrackedProcess p : table.values()) {
        p.close();
      }
      table.clear();
      engine.close();
      if (placement != null) {
        placement.close();
      }
    }
  }

  private CaptureEngine.Listener listener(List<TrackedProcess> batch, Placement placement) {
    return new CaptureEngine.Listener() {
      @Override
      public void tick(CaptureRecord r) {
        TrackedProcess p = table.get(r.tgid());
        if (p == null) {
          Long exit = exitedAt.get(r.tgid());
          if (exit != null && (r.monotonicNanos() <= exit || options.record())) {
            // Taken before its exit, or in it: a record tracks a new process under the pid at
            // its fork or exec, so a later tick is still the exiting one's (not described again).
            lost(HostCounters.PROCESS_GONE, 1);
            return;
          }
          p = track(r.tgid());
          if (p == null) {
            lost(HostCounters.PROCESS_GONE, 1);
            return;
          }
        }
        p.lastTickNanos = System.nanoTime();
        if (placement != null) {
          placement.ticked(r);
        }
        if (!p.tickedInBatch) {
          p.tickedInBatch = true;
          batch.add(p);
        }
        Long exec = execAt.get(r.tgid());
        if (exec != null && r.monotonicNanos() < exec) {
          p.ticks().acceptReplaced(r); // the memory is the next program's by now
        } else {
          p.ticks().accept(r);
        }
      }

      @Override
      public void imageReplaced(int pid, long monotonicNanos) {
        execAt.merge(pid, monotonicNanos, Math::min);
      }

      @Override
      public void event(ProcessEvent e) {
        onEvent(e);
      }

      @Override
      public void allocation(AllocRecord r) {
        TrackedProcess p = table.get(r.tgid());
        if (p == null || p.allocations == null) {
          lost(HostCounters.PROCESS_GONE, 1);
          return;
        }
        p.lastTickNanos = System.nanoTime();
        p.allocations.accept(r);
      }

      @Override
      public void allocationStack(long digest, CaptureRecord r) {
        TrackedProcess p = table.get(r.tgid());
        if (p != null && p.allocations != null) {
          p.allocations.define(digest, r.tid(), p.ticks().walkStack(r));
        }
      }

      @Override
      public void malformed() {
        lost(HostCounters.MALFORMED_RECORD, 1);
      }
    };
  }

  private void afterBatch(List<TrackedProcess> batch) {
    for (TrackedProcess p : batch) {
      p.tickedInBatch = false;
      if (!p.retired()) { // exited within the batch: retiring walked its ticks
        // A walk asked for the map (a library or JIT code it could not place): read it now,
        // not at the next housekeeping, so a runtime's plan follows its first walks at once.
        refreshIfWanted(p);
        p.ticks().afterBatch(true);
        if (p.ticks().awaitingPlan()) {
          settleUntil = Math.max(settleUntil, p.describedNanos + SETTLE_NANOS);
        }
      }
    }
    batch.clear();
  }

  /** How long the next poll may wait for records. */
  private int pollMillis(long now) {
    if (now < settleUntil) {
      return SETTLE_POLL_MILLIS;
    }
    if (now < execWatchUntil) {
      return EXEC_POLL_MILLIS;
    }
    if (emptyPolls >= IDLE_POLLS) {
      return IDLE_POLL_MILLIS;
    }
    return options.record() ? RECORD_POLL_MILLIS : POLL_MILLIS;
  }

  /**
   * Exec: the program changed, so its description is retired. A record describes the process
   * anew now, while it surely runs (a short-lived program may be gone by its first tick's walk);
   * the host-wide agent describes it at its first tick, which wakes the reader (bpf) or is read
   * soon after (see {@link #EXEC_POLL_MILLIS}). A selection by name re-decides, a process given
   * or followed from a given one stays. Exit: released after its last samples are cut. Fork of
   * a followed process: described now, for the same reason.
   */
  private void onEvent(ProcessEvent e) {
    int pid = e.tgid();
    switch (e.kind()) {
      case EXEC -> {
        TrackedProcess known = table.get(pid);
        if (known != null && e.monotonicNanos() < known.describedNanos) {
          // Described after this exec (a launched command, selected at its exec; perf mode's
          // events are host-wide): the description is the new program's already.
          return;
        }
        execAt.remove(pid);
        exitedAt.remove(pid);
        retire(table.remove(pid), true);
        unreadable.remove(pid);
        ProcessSelection s = options.selection();
        if (kernelSelects && !options.record()) {
          if (!engine.wakesAtFirstTick()) {
            execWatchUntil = System.nanoTime() + EXEC_WATCH_NANOS;
          }
        } else if (kernelSelects || s.pids().contains(pid)
            || !s.byName() && selected.contains(pid) && ofFollowedUser(pid)) {
          track(pid); // given, or followed from a given one: whatever it runs now
        } else if (s.selects(proc, pid)) {
          select(pid);
          track(pid);
        } else {
          deselect(pid);
        }
      }
      case EXIT -> {
        exitedAt.put(pid, e.monotonicNanos());
        retire(table.remove(pid));
        unreadable.remove(pid);
        if (!kernelSelects) {
          deselect(pid);
        }
      }
      case FORK -> {
        unreadable.remove(pid);
        exitedAt.remove(pid); // a new process under a pid that exited before
        if (!ofFollowedUser(pid)) {
          deselect(pid); // another user's process: not recorded (--user)
          return;
        }
        selected.add(pid);
        if (!table.containsKey(pid)) {
          track(pid);
        }
      }
    }
  }

  private boolean ofFollowedUser(int pid) {
    if (options.followedUser().isEmpty()) {
      return true;
    }
    long user = options.followedUser().getAsLong();
    try {
      var uid = proc.forPid(pid).status().uid();
      return uid.real() == user && uid.effective() == user;
    } catch (ProcReadException e) {
      return false;
    }
  }

  /** At the start, in a selection: the running processes it selects. */
  private void selectRunning() {
    ProcessSelection s = options.selection();
    if (kernelSelects) {
      return;
    }
    for (int pid : s.pids()) {
      if (!proc.forPid(pid).exists()) {
        warn.accept("process " + pid + " does not exist: it is not profiled");
        continue;
      }
      select(pid);
    }
    if (!s.byName()) {
      return;
    }
    try (DirectoryStream<Path> dir = Files.newDirectoryStream(proc.root())) {
      for (Path p : dir) {
        String name = p.getFileName().toString();
        if (!name.chars().allMatch(Character::isDigit) || name.length() > 9) {
          continue;
        }
        int pid = Integer.parseInt(name);
        if (pid != self && !s.pids().contains(pid) && s.selects(proc, pid)) {
          select(pid);
        }
      }
    } catch (IOException e) {
      warn.accept("cannot list " + proc.root() + ": " + e.getMessage()
          + "; only processes that start from now on are profiled");
    }
  }

  private void select(int pid) {
    try {
      engine.select(pid, options.follows());
      selected.add(pid);
    } catch (RuntimeException e) {
      lost(HostCounters.SELECT_FAILED, 1);
    }
  }

  /**
   * In a selection, how many selected processes have not been seen to exit (a followed child
   * counts from its fork); 0 once all are gone. For the stop condition, which runs on the
   * pipeline's thread.
   */
  public int selectedRunning() {
    return selected.size();
  }

  private void deselect(int pid) {
    if (!selected.remove(pid) && !options.follows()) {
      return; // never in the kernel's table: no system call at each exit on the host
    }
    try {
      engine.deselect(pid);
    } catch (RuntimeException e) {
      // the kernel entry is gone with the process, or the capture is closing
    }
  }

  /**
   * In a record, a chosen process is described at the start, reported even if it never runs,
   * its CPU time counted from now and its capture plans installed before its first tick.
   */
  private void describeNow(int pid) {
    TrackedProcess p = table.containsKey(pid) ? table.get(pid) : track(pid);
    if (p != null) {
      p.ticks().housekeeping();
      settleUntil = Math.max(settleUntil, p.describedNanos + SETTLE_NANOS);
    }
  }

  /** Describes a process seen for the first time; null when it cannot be (counted). */
  private TrackedProcess track(int pid) {
    Long refusedAt = unreadable.get(pid);
    if (refusedAt != null) {
      return null;
    }
    if (table.size() >= options.maxProcesses()) {
      evictLeastRecent();
    }
    long startedAt = System.nanoTime(); // an exec after this is news to the description
    ProcessIdentity identity = ProcessIdentity.read(proc, pid).orElse(null);
    if (identity == null) {
      refuse(pid);
      return null;
    }
    // Host-wide, a module of a process that exits while it is described is no news: counted
    // (module_unreadable), not printed; a chosen process's modules are worth a line.
    TargetProcess target = new TargetProcess(pid, proc, modules, ProcessMemory.of(pid), plugins,
        guard, inspections, kernelSelects ? line -> { } : warn);
    try {
      target.refresh();
    } catch (ProcReadException | RuntimeException e) {
      target.close();
      refuse(pid);
      return null;
    }
    TargetInfo info = TargetDescriber.describe(proc, pid);
    SampleProcessor samples = SampleProcessor.forIntervals(target, proc);
    TargetCpuClock cpu = null;
    if (options.record()) {
      cpu = new TargetCpuClock(proc, pid, options.threads(), samples::processed);
      cpu.read(true);
    }
    TrackedProcess[] self = new TrackedProcess[1];
    ProcessTicks ticks = new ProcessTicks(target, sampling, walker, bounded(samples),
        () -> self[0].refreshWanted = true, guard, engine.planSlots(),
        cpus);
    processesSeen++;
    self[0] = new TrackedProcess(identity, info, () -> TargetDescriber.describe(proc, pid),
        resources::of, target, samples, ticks, cpu, startedAt, processesSeen, hashes);
    table.put(pid, self[0]);
    if (options.allocations()) {
      probeAllocator(self[0]);
    }
    return self[0];
  }

  /**
   * Probes a described process's allocator; one that has none to probe (no C library, a
   * stripped static program) is counted and stays described, without allocations.
   */
  private void probeAllocator(TrackedProcess p) {
    try {
      p.allocations = ProcessAllocations.attach(proc, p.target, engine.allocations()
          .orElseThrow(), options.allocMeanBytes(), p.samples::lost);
      p.allocatorWanted = false;
    } catch (AllocatorSites.SiteException e) {
      // Seen at its exec, a program has only the dynamic linker mapped: its C library comes
      // soon, so housekeeping asks again for a while (docs/allocations.md, "In the agent").
      p.allocatorWanted = System.nanoTime() - p.describedNanos < ALLOCATOR_WAIT_NANOS;
      if (!p.allocatorWanted) {
        lost(HostCounters.ALLOC_PROCESS_UNPROBED, 1);
      }
    } catch (BpfLoadException | RuntimeException e) {
      p.allocatorWanted = false;
      lost(HostCounters.ALLOC_PROCESS_UNPROBED, 1);
    }
  }

  private void refuse(int pid) {
    notDescribed++;
    if (unreadable.size() < options.maxProcesses()) {
      unreadable.put(pid, System.nanoTime());
    }
  }

  /** The sink of one process's walk, within the interval's sample bound. */
  private SampleSink bounded(SampleProcessor samples) {
    return new SampleSink() {
      @Override
      public void accept(ThreadSample sample) {
        if (intervalSamples >= options.maxIntervalSamples()) {
          lost(HostCounters.INTERVAL_FULL, sample.periods());
          return;
        }
        intervalSamples++;
        samples.accept(sample);
      }

      @Override
      public void lost(String reason) {
        samples.lost(reason);
      }

      @Override
      public void lost(Counter reason) {
        samples.lost(reason);
      }

      @Override
      public void lost(Counter reason, long count) {
        samples.lost(reason, count);
      }

      @Override
      public void lost(String reason, long count) {
        samples.lost(reason, count);
      }
    };
  }

  private void evictLeastRecent() {
    TrackedProcess oldest = null;
    for (TrackedProcess p : table.values()) {
      if (oldest == null || p.lastTickNanos < oldest.lastTickNanos) {
        oldest = p;
      }
    }
    if (oldest != null) {
      table.remove(oldest.pid());
      retire(oldest);
      evicted++;
    }
  }

  private void retire(TrackedProcess p) {
    retire(p, false);
  }

  /** @param imageReplaced it exec'd: what is left of its records is walked without live reads */
  private void retire(TrackedProcess p, boolean imageReplaced) {
    if (p != null) {
      p.retire(imageReplaced);
      retired.add(p);
    }
  }

  private void housekeeping(long now) {
    for (TrackedProcess p : table.values()) {
      if (now - p.lastTickNanos > 2_000_000_000L) {
        continue; // plans and maps only matter to processes that run
      }
      refreshIfWanted(p);
      p.ticks().housekeeping();
      if (p.allocations != null) {
        p.allocations.updateRanges(p.target.mappings());
      } else if (p.allocatorWanted) {
        p.refreshWanted = true;
        refreshIfWanted(p);
        probeAllocator(p);
      }
      if (p.cpu != null) {
        p.cpu.read(false);
      }
    }
  }

  private static void refreshIfWanted(TrackedProcess p) {
    if (p.refreshWanted) {
      p.refreshWanted = false;
      try {
        p.target.refresh();
      } catch (ProcReadException | RuntimeException e) {
        // going away: its exit event follows
      }
    }
  }

  private void cut(Sink sink, long fromEpoch, long toEpoch, boolean last, long now,
      long intervalNanos) {
    List<ProcessProfile> profiles = new ArrayList<>();
    for (TrackedProcess p : table.values()) {
      add(profiles, p, fromEpoch, toEpoch, false);
    }
    for (TrackedProcess p : retired) {
      add(profiles, p, fromEpoch, toEpoch, true);
    }
    intervalSamples = 0;
    readKernel();
    PipelineStats stats = stats();
    for (TrackedProcess p : retired) {
      release(p);
    }
    retired.clear();
    if (!last) {
      checkIdle(now, intervalNanos);
    }
    try {
      sink.interval(profiles, stats, last);
    } catch (RuntimeException e) {
      lost(HostCounters.EXPORT_HOOK_FAILED, profiles.stream()
          .mapToLong(pp -> dev.polystack.otel.model.Sample.count(pp.recording().samples()))
          .sum());
    }
  }

  private void add(List<ProcessProfile> out, TrackedProcess p, long from, long to,
      boolean exited) {
    Recording r = p.cut(from, to, sampling.periodNanos(), engine.name(), options.record());
    if (r != null) {
      Map<String, Long> l = new TreeMap<>(p.samples.losses());
      p.target.getAndResetCounters().forEach((k, v) -> p.counted.merge(k, v, Long::sum));
      p.counted.forEach((k, v) -> l.merge(k, v, Long::sum));
      p.figures().forEach((k, v) -> l.merge(k, v, Long::sum));
      if (p.cpu != null) {
        p.cpu.counters().forEach((k, v) -> l.merge(k, v, Long::sum));
      }
      out.add(new ProcessProfile(r, p.resource(), new ProcessFigures(p.samples.processed(),
          p.samples.periods(), p.samples.threadCount(), p.samples.errors(), l, exited),
          p.serial));
    }
  }

  /** A process that stopped ticking may be gone with its exit event lost: checked, not trusted. */
  private void checkIdle(long now, long intervalNanos) {
    List<TrackedProcess> gone = new ArrayList<>();
    for (TrackedProcess p : table.values()) {
      long idle = now - p.lastTickNanos;
      if (options.record() || options.allocations()) {
        // A chosen process is reported to the end, a probed one keeps its probes (it allocates
        // without ticks): their exit events retire them.
        continue;
      }
      if (idle > IDLE_RELEASE_NANOS) {
        evicted++;
        gone.add(p);
      } else if (idle > IDLE_INTERVALS * intervalNanos && !p.identity.isCurrent(proc)) {
        gone.add(p);
      }
    }
    for (TrackedProcess p : gone) {
      table.remove(p.pid());
      release(p);
    }
  }

  private void release(TrackedProcess p) {
    releasedSamples += p.samples.processed();
    p.samples.losses().forEach((k, v) -> releasedLosses.merge(k, v, Long::sum));
    p.samples.errors().forEach((k, v) -> releasedErrors.merge(k, v, Long::sum));
    p.target.getAndResetCounters().forEach((k, v) -> p.counted.merge(k, v, Long::sum));
    p.counted.forEach((k, v) -> releasedLosses.merge(k, v, Long::sum));
    p.close();
  }

  private void readKernel() {
    try {
      kernel = engine.counters();
    } catch (RuntimeException e) {
      lost(HostCounters.CAPTURE_COUNTERS_UNREADABLE, 1);
    }
  }

  /** The figures so far; on the pipeline's thread only (a stop condition, a sink). */
  public PipelineStats stats() {
    long samples = releasedSamples;
    Map<String, Long> l = new TreeMap<>(releasedLosses);
    Map<String, Long> err = new TreeMap<>(releasedErrors);
    List<TrackedProcess> all = new ArrayList<>(table.values());
    all.addAll(retired);
    for (TrackedProcess p : all) {
      samples += p.samples.processed();
      p.samples.losses().forEach((k, v) -> l.merge(k, v, Long::sum));
      p.counted.forEach((k, v) -> l.merge(k, v, Long::sum));
      p.samples.errors().forEach((k, v) -> err.merge(k, v, Long::sum));
    }
    losses.forEach((k, v) -> l.merge(k, v, Long::sum));
    Map<String, Long> run = new TreeMap<>(losses);
    Map<String, Long> figures = new TreeMap<>();
    if (evicted > 0) {
      figures.put(HostCounters.PROCESS_EVICTED.name(), evicted);
    }
    if (notDescribed > 0) {
      figures.put(HostCounters.PROCESSES_NOT_DESCRIBED.name(), notDescribed);
    }
    kernel.forEach((k, v) -> {
      Counter c = HostCounters.kernel(k);
      if (v > 0) {
        (c.isLoss() ? l : figures).merge(c.name(), v, Long::sum);
        if (c.isLoss()) {
          run.merge(c.name(), v, Long::sum);
        }
      }
    });
    return new PipelineStats(samples, table.size(), processesSeen, l, err, figures, run);
  }

  private void lost(Counter reason, long n) {
    losses.merge(reason.name(), n, Long::sum);
  }

  private static long epochNow() {
    return System.currentTimeMillis() * 1_000_000L;
  }
}
