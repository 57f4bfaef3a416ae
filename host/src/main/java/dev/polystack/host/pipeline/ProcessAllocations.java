package dev.polystack.host.pipeline;

import dev.polystack.host.alloc.AllocationTable;
import dev.polystack.host.alloc.AllocatorSites;
import dev.polystack.host.bpf.AllocRecord;
import dev.polystack.host.bpf.AllocationProbes;
import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.UprobeLink;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.session.FrameNamer;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.Mapping;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * One process's allocations in the agent ({@code agent --event alloc}): its C library's
 * allocator probed by a uprobe session link of its own, the sampled allocations and frees by
 * stack, and what each interval adds. Each interval's samples carry the objects and bytes
 * allocated in it and what is in use at its end (docs/allocations.md, "In the agent").
 */
final class ProcessAllocations {
  private final int pid;
  private final AllocationProbes probes;
  private final List<UprobeLink> links;
  private final List<long[]> allocatorRanges;
  private final List<long[]> mapperTexts;
  private final AllocationTable<RawStack> table;
  private final long meanBytes;
  private final Consumer<String> lost;
  /** Per stack, the allocated objects and bytes already reported (rounded). */
  private final Map<AllocationTable.Entry<RawStack>, long[]> reported = new IdentityHashMap<>();
  private final FrameNamer namer = new FrameNamer();
  private List<Mapping> rangesOf = List.of();
  private boolean released;

  private ProcessAllocations(int pid, AllocationProbes probes, List<UprobeLink> links,
      List<long[]> allocatorRanges, List<long[]> mapperTexts, long meanBytes,
      Consumer<String> lost) {
    this.pid = pid;
    this.probes = probes;
    this.links = links;
    this.allocatorRanges = List.copyOf(allocatorRanges);
    this.mapperTexts = List.copyOf(mapperTexts);
    this.table = new AllocationTable<>(meanBytes, lost);
    this.lost = lost;
    this.meanBytes = meanBytes;
  }

  /** One sample per this many bytes on average; 0: every call. */
  long meanBytes() {
    return meanBytes;
  }

  /**
   * Probes the allocator of {@code target}: its code ranges first (the kernel's digest needs
   * them), then its link, whose cookies are the sites' kinds (the engine declared every kind).
   */
  static ProcessAllocations attach(ProcFs proc, TargetProcess target, AllocationProbes probes,
      long meanBytes, Consumer<String> lost)
      throws AllocatorSites.SiteException, BpfLoadException {
    int pid = target.pid();
    AllocatorSites sites = AllocatorSites.of(proc, pid, target.mappings());
    long[] cookies = sites.kinds().stream().mapToLong(AllocationProbes.Kind::code).toArray();
    List<UprobeLink> links = new ArrayList<>();
    ProcessAllocations a = new ProcessAllocations(pid, probes, links, sites.ranges(),
        sites.mappers().texts(), meanBytes, lost);
    a.updateRanges(target.mappings());
    try {
      links.add(probes.attach(sites.file(), sites.offsets(), cookies, pid));
      AllocatorSites.Mappers m = sites.mappers();
      if (m.offsets().length > 0) {
        links.add(probes.attach(m.file(), m.offsets(),
            m.kinds().stream().mapToLong(AllocationProbes.Kind::code).toArray(), pid));
      }
    } catch (BpfLoadException | RuntimeException e) {
      a.release();
      throw e;
    }
    return a;
  }

  /** The digest needs the process's code ranges; they change with dlopen and JIT code. */
  void updateRanges(List<Mapping> now) {
    if (released || now.equals(rangesOf)) {
      return;
    }
    rangesOf = now;
    try {
      probes.setRanges(pid, AllocatorSites.textRanges(now, AllocationProbes.TEXT_RANGES),
          allocatorRanges, mapperTexts);
    } catch (RuntimeException e) {
      lost.accept(HostCounters.ALLOC_RANGES_REFUSED.name()); // digests keep the previous ranges
    }
  }

  void define(long digest, int tid, RawStack stack) {
    table.define(digest, tid, stack);
  }

  void accept(AllocRecord r) {
    table.accept(r);
  }

  /**
   * The interval's samples, named with the process's modules now: per stack, the objects and
   * bytes allocated since the last cut and what is in use now; stacks with none are left out.
   */
  List<Sample> cut(long epochNanos, TargetProcess target) {
    List<Sample> out = new ArrayList<>();
    for (AllocationTable.Entry<RawStack> e : table.entries()) {
      long[] now = e.totals().rounded();
      long[] before = reported.computeIfAbsent(e, k -> new long[2]);
      long[] values = {now[0] - before[0], now[1] - before[1], now[2], now[3]};
      before[0] = now[0];
      before[1] = now[1];
      if (values[0] <= 0 && values[1] <= 0 && values[2] <= 0 && values[3] <= 0) {
        continue;
      }
      for (int i = 0; i < values.length; i++) {
        values[i] = Math.max(0, values[i]);
      }
      List<Frame> frames = e.stack() == null
          ? List.of(Frame.error("allocation_stack_lost"))
          : namer.name(e.stack(), target.table());
      out.add(new Sample(e.tid(), "", epochNanos, new StackTrace(frames), Map.of(), 1, 1,
          values));
    }
    return out;
  }

  /** Removes the process's probes and ranges from the kernel. Idempotent. */
  void release() {
    if (!released) {
      released = true;
      try {
        probes.release(pid, links);
      } catch (RuntimeException e) {
        // the capture is closing: its close removes every link
      }
    }
  }
}
