package dev.polystack.host.sampling.nostop;

import dev.polystack.host.alloc.AllocationTable;
import dev.polystack.host.alloc.AllocatorSites;
import dev.polystack.host.alloc.RuntimeAllocator;
import dev.polystack.host.bpf.AllocRecord;
import dev.polystack.host.bpf.AllocationProbes;
import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.process.RuntimeBinding;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.CapturedThread;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.host.sampling.SamplerOutcome;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.unwind.UnwindError;
import dev.polystack.otel.counters.Counter;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.plugin.api.AllocatorSite;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Mapping;
import dev.polystack.plugin.api.Registers;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;

/**
 * The allocation loop of {@code record --event alloc}: probes the target's allocator through
 * the capture's allocation program, walks each stack definition as a tick is walked, and keeps
 * the sampled allocations and frees in an {@link AllocationTable}. The runtimes' allocator
 * functions (named by their plug-ins, e.g. LuaJIT's lua_Alloc) are probed as they become known,
 * and the runtimes' capture plans are installed so that a sampled allocation carries the
 * runtime's stack as a tick does. The target is never stopped.
 */
public final class AllocSampler implements NoStopSampler {
  static final long HOUSEKEEPING_NANOS = 100_000_000L;
  static final long KERNEL_COUNTERS_NANOS = 1_000_000_000L;

  private final TargetProcess target;
  private final SamplingOptions options;
  private final StackWalker walker;
  private final SampleSink sink;
  private final TickCapture capture;
  private final Sites sites;
  private final PluginGuard guard;
  /** Runtime allocator functions probed so far, by runtime address, and their ranges. */
  private final Set<Long> runtimeProbed = new HashSet<>();
  private final List<long[]> runtimeRanges = new ArrayList<>();
  private final List<RuntimeAllocator> runtimeAllocators = new ArrayList<>();
  private List<CapturePlan> plans = List.of();
  private final RuntimePlans runtimePlans;
  private final AllocationTable<RawStack> table;
  private final PollLoop.SyncRefresh syncRefresh;
  private final Map<String, Long> kernelSeen = new HashMap<>();
  /** Records of one poll, in ring order: definitions precede the records that name them. */
  private final List<Object> batch = new ArrayList<>();
  /** For records walked after the process exited (see {@link LastLivePages}). */
  private final LastLivePages lastLive = new LastLivePages();
  private List<Mapping> rangesOf = List.of();
  private long countersRead = System.nanoTime();

  private record Definition(long digest, CaptureRecord record) {}

  /**
   * What the allocation program probes: each site's kind (its index is its link cookie), where
   * the sites are, the probed functions' ranges (a call from inside one is not counted) and
   * whether the runtimes' allocator functions join them.
   */
  public record Sites(List<AllocationProbes.Kind> kinds, List<Group> groups,
      List<long[]> functionRanges, List<long[]> mapperTexts, boolean runtimeAllocators) {
    public Sites {
      kinds = List.copyOf(kinds);
      groups = List.copyOf(groups);
      functionRanges = List.copyOf(functionRanges);
      mapperTexts = List.copyOf(mapperTexts);
      if (kinds.isEmpty() || kinds.size() > AllocationProbes.MAX_SITES) {
        throw new IllegalArgumentException("1.." + AllocationProbes.MAX_SITES + " sites, not "
            + kinds.size());
      }
    }

    /** The C library's allocator, and the runtimes' as they are named. */
    public static Sites of(AllocatorSites allocator) {
      List<AllocationProbes.Kind> kinds = new ArrayList<>(allocator.kinds());
      List<Group> groups = new ArrayList<>();
      groups.add(new Group(allocator.file(), allocator.offsets(), allocator.cookies()));
      AllocatorSites.Mappers m = allocator.mappers();
      if (m.offsets().length > 0) {
        long[] cookies = new long[m.offsets().length];
        for (int i = 0; i < cookies.length; i++) {
          cookies[i] = kinds.size() + i;
        }
        kinds.addAll(m.kinds());
        groups.add(new Group(m.file(), m.offsets(), cookies));
      }
      return new Sites(kinds, groups, allocator.ranges(), m.texts(), true);
    }
  }

  /** Sites in one file: their file offsets and cookies (site numbers). */
  public record Group(java.nio.file.Path file, long[] offsets, long[] cookies) {
    public Group {
      if (offsets.length != cookies.length || offsets.length == 0) {
        throw new IllegalArgumentException("one cookie per offset, at least one");
      }
      offsets = offsets.clone();
      cookies = cookies.clone();
    }
  }

  /**
   * @param capture opened with {@link TickCapture.Feature#ALLOC}, its sampling configured
   * @param mean the sampling's mean bytes (0: every call), for the weights
   */
  public AllocSampler(TargetProcess target, SamplingOptions options, StackWalker walker,
      SampleSink sink, TickCapture capture, Sites sites, long mean, PluginGuard guard) {
    this.target = target;
    this.runtimePlans = new RuntimePlans(target.pid(), target::warn);
    this.options = options;
    this.walker = walker;
    this.sink = sink;
    this.capture = capture;
    this.sites = sites;
    this.guard = guard;
    this.table = new AllocationTable<>(mean, sink::lost);
    this.syncRefresh = new PollLoop.SyncRefresh(target);
  }

  /** The sampled allocations by stack. */
  public AllocationTable<RawStack> table() {
    return table;
  }

  @Override
  public void openAll() throws SamplingException {
    AllocationProbes probes = capture.allocations();
    try {
      for (int i = 0; i < sites.kinds().size(); i++) {
        probes.setSite(i, sites.kinds().get(i));
      }
      capture.addTarget(target.pid(), 0);
      updateRanges();
      for (Group g : sites.groups()) {
        probes.attach(g.file(), g.offsets(), g.cookies(), target.pid());
      }
    } catch (BpfLoadException | RuntimeException e) {
      throw new SamplingException("cannot probe the allocator of process " + target.pid()
          + ": " + e.getMessage());
    }
    updateRuntimeAllocators();
  }

  /**
   * Probes the allocator functions the runtimes name that are not probed yet, after installing
   * the runtimes' capture plans (naming them may have found the VM a plan needs), so that the
   * first allocation through a new site already carries the runtime's stack.
   */
  private void updateRuntimeAllocators() {
    if (!sites.runtimeAllocators()) {
      updatePlans();
      return;
    }
    List<RuntimeAllocator> fresh = new ArrayList<>();
    for (RuntimeBinding b : target.table().bindings()) {
      if (!b.plugin().descriptor().capabilities().contains(Capability.ALLOCATOR_SITES)) {
        continue;
      }
      List<AllocatorSite> named = guard.call(b.plugin(), "allocatorSites",
          b.instance()::allocatorSites).orElse(List.of());
      for (AllocatorSite site : named) {
        if (runtimeProbed.add(site.address())) {
          RuntimeAllocator.resolve(target.pid(), target.mappings(), target.table(), site)
              .ifPresentOrElse(fresh::add, () -> sink.lost(HostCounters.ALLOC_SITE_REFUSED));
        }
      }
    }
    updatePlans();
    AllocationProbes probes = capture.allocations();
    for (RuntimeAllocator a : fresh) {
      int site = sites.kinds().size() + runtimeAllocators.size();
      if (site >= AllocationProbes.MAX_SITES
          || sites.functionRanges().size() + runtimeRanges.size()
          >= AllocationProbes.ALLOCATOR_RANGES) {
        sink.lost(HostCounters.ALLOC_SITE_REFUSED);
        continue;
      }
      try {
        probes.setSite(site, a.kind());
        runtimeRanges.add(a.range());
        rangesOf = List.of(); // the allocator ranges changed: written again below
        updateRanges();
        probes.attach(a.file(), new long[] {a.offset()}, new long[] {site}, target.pid());
        runtimeAllocators.add(a);
      } catch (BpfLoadException | RuntimeException e) {
        runtimeRanges.remove(a.range());
        rangesOf = List.of(); // written again without it at the next housekeeping
        sink.lost(HostCounters.ALLOC_SITE_REFUSED);
      }
    }
  }

  /**
   * The plug-ins bound to the target that name allocator functions, when none was probed: the
   * allocations of their runtimes are missing from the profile.
   */
  public List<String> runtimesWithoutAllocator() {
    if (!awaitsRuntimeAllocator()) {
      return List.of();
    }
    return target.table().bindings().stream()
        .filter(b -> b.plugin().descriptor().capabilities().contains(Capability.ALLOCATOR_SITES))
        .map(b -> b.plugin().descriptor().id()).distinct().toList();
  }

  /** Whether a runtime that names allocator functions is bound but none is probed yet. */
  private boolean awaitsRuntimeAllocator() {
    return sites.runtimeAllocators() && runtimeProbed.isEmpty() && target.table().bindings().stream().anyMatch(
        b -> b.plugin().descriptor().capabilities().contains(Capability.ALLOCATOR_SITES));
  }

  /**
   * Installs the runtimes' capture plans as {@link ProcessTicks} does for ticks: a sampled
   * allocation's stack definition then carries the runtime's state as at the call.
   */
  private void updatePlans() {
    plans = RuntimePlans.install(ProcessTicks.PlanSlots.of(capture), target.pid(),
        runtimePlans.select(RuntimePlans.candidates(target, guard), sink), plans, sink);
  }

  @Override
  public void placeBeforeStart(ProcFs proc) {
    // Nothing to place: the program runs in the target's own calls, on its CPUs.
  }

  @Override
  public SamplerOutcome run(BooleanSupplier stop, TargetExit exit) throws SyscallException {
    PollLoop.Ended ended = PollLoop.run(options, HOUSEKEEPING_NANOS, stop, exit,
        new PollLoop.Body() {
          @Override
          public boolean poll(int timeoutMillis) {
            return drain(timeoutMillis);
          }

          @Override
          public void afterPoll(long nowNanos) {}

          @Override
          public void housekeeping() {
            if (awaitsRuntimeAllocator()) {
              syncRefresh.now(); // a VM created since: the plug-in searches the new map
            }
            updateRanges();
            updateRuntimeAllocators();
            long now = System.nanoTime();
            if (now - countersRead >= KERNEL_COUNTERS_NANOS) {
              countersRead = now;
              countKernelLosses();
            }
          }
        });
    capture.removeTarget(target.pid());
    drain(0); // what the kernel wrote before the end still counts
    countKernelLosses();
    return new SamplerOutcome(exit.status(), ended.byUser(), ended.targetGone(), counters());
  }

  /** The digest needs the process's code ranges; they change with dlopen and JIT code. */
  private void updateRanges() {
    List<Mapping> now = target.mappings();
    if (now.equals(rangesOf)) {
      return;
    }
    rangesOf = now;
    List<long[]> allocator = new ArrayList<>(sites.functionRanges());
    allocator.addAll(runtimeRanges);
    List<long[]> mappers = new ArrayList<>(sites.mapperTexts());
    runtimeAllocators.forEach(a -> mappers.add(a.moduleText()));
    try {
      capture.allocations().setRanges(target.pid(),
          AllocatorSites.textRanges(now, AllocationProbes.TEXT_RANGES), allocator, mappers);
    } catch (RuntimeException e) {
      sink.lost(HostCounters.ALLOC_RANGES_REFUSED);
    }
  }

  private boolean drain(int timeoutMillis) {
    batch.clear();
    capture.poll(timeoutMillis, bytes -> {
      try {
        if (AllocRecord.isAllocation(bytes)) {
          batch.add(AllocRecord.parse(bytes));
        } else if (AllocRecord.isDefinition(bytes)) {
          batch.add(new Definition(AllocRecord.definitionDigest(bytes),
              CaptureRecord.parse(bytes)));
        }
        // Anything else (process events) a record of one process does not ask for.
      } catch (IllegalArgumentException e) {
        sink.lost(HostCounters.MALFORMED_RECORD);
      }
    });
    for (Object o : batch) {
      if (o instanceof Definition d && d.record().tgid() == target.pid()) {
        table.define(d.digest(), d.record().tid(), walk(d.record()));
      } else if (o instanceof AllocRecord r && r.tgid() == target.pid()) {
        table.accept(r);
      }
    }
    boolean read = !batch.isEmpty();
    batch.clear();
    return read;
  }

  private RawStack walk(CaptureRecord r) {
    RawStack stack = walkOnce(r);
    if (stack.endedWith(UnwindError.NO_MODULE) && syncRefresh.now()) {
      stack = walkOnce(r); // a library loaded since the last map read
    }
    return stack;
  }

  private RawStack walkOnce(CaptureRecord r) {
    TickMemory memory = new TickMemory(r, target.hostMemory(),
        TickMemory.stablePages(target.hostMemory(), lastLive));
    return walker.walk(new CapturedThread(target.pid(), r.tid(), Registers.of(r.regs()), memory,
        r.stackStart(), r.stack().length), target.table());
  }

  private void countKernelLosses() {
    Map<String, Long> now = capture.counters();
    for (Map.Entry<String, Long> e : now.entrySet()) {
      long delta = e.getValue() - kernelSeen.getOrDefault(e.getKey(), 0L);
      kernelSeen.put(e.getKey(), e.getValue());
      Counter counter = HostCounters.kernel(e.getKey());
      if (delta > 0 && counter.isLoss()) {
        sink.lost(counter, delta);
      }
    }
  }

  private Map<String, Long> counters() {
    Map<String, Long> out = new TreeMap<>();
    kernelSeen.forEach((k, v) -> {
      Counter counter = HostCounters.kernel(k);
      if (v > 0 && !counter.isLoss()) {
        out.put(counter.name(), v);
      }
    });
    if (lastLive.served() > 0) {
      out.put(HostCounters.CAPTURE_KEPT_PAGE_READS.name(), lastLive.served());
    }
    if (!plans.isEmpty()) {
      out.put(HostCounters.CAPTURE_PLANS.name(), (long) plans.size());
    }
    return out;
  }

  @Override
  public void close() {
    try {
      capture.removeTarget(target.pid());
    } catch (RuntimeException e) {
      // the capture is closed with the session
    }
  }
}
