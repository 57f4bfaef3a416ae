package dev.polystack.host.pipeline;

import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.process.LoadedModule;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.nostop.ProcessTicks;
import dev.polystack.host.session.SampleProcessor;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.TargetInfo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One process of the process table: described once (its identity, what /proc says of it, its
 * resource, its modules and runtimes), walked from its ticks, its samples held until the next
 * interval is cut. A process that exits or execs is retired: its last samples are cut with the
 * next interval and everything it held is then released.
 */
final class TrackedProcess implements AutoCloseable {
  final ProcessIdentity identity;
  /** Its executable, arguments and resource; described again while empty (mid-exec). */
  private ProcessDescription description;
  private final Supplier<TargetInfo> describe;
  private final Function<TargetInfo, Map<String, Object>> resourceOf;
  final TargetProcess target;
  final SampleProcessor samples;
  /** Null once retired: its walk state goes with it. */
  private ProcessTicks ticks;
  /** The walk's figures, frozen at retirement; null while it runs. */
  private Map<String, Long> retiredFigures;
  /** Its CPU time from /proc, for the on-CPU rate; null when not measured. */
  final dev.polystack.host.session.TargetCpuClock cpu;
  /** Mapped files named in samples so far, by path and start (the OTLP mapping table). */
  private final Map<String, ModuleInfo> modules = new LinkedHashMap<>();
  /** The target model's counters taken so far (it resets them as they are read). */
  final Map<String, Long> counted = new java.util.TreeMap<>();
  private final ModuleHashes hashes;
  /** Which description this is, counted over the run (an exec makes a new one). */
  final long serial;
  /** When it was described (System.nanoTime, the clock of the events' times). */
  final long describedNanos;
  long lastTickNanos;
  boolean refreshWanted;
  /** Its allocator's probes and samples ({@code agent --event alloc}); else null. */
  ProcessAllocations allocations;
  /** Its allocator is looked for again at housekeeping (not mapped yet at its exec). */
  boolean allocatorWanted;
  /** The allocation samples of its last interval, named when it was retired. */
  private List<Sample> retiredAllocations = List.of();
  boolean tickedInBatch;

  /** @param describe reads its {@link TargetInfo} from /proc again */
  TrackedProcess(ProcessIdentity identity, TargetInfo info,
      Supplier<TargetInfo> describe,
      Function<TargetInfo, Map<String, Object>> resourceOf,
      TargetProcess target, SampleProcessor samples, ProcessTicks ticks,
      dev.polystack.host.session.TargetCpuClock cpu, long nowNanos, long serial,
      ModuleHashes hashes) {
    this.identity = identity;
    this.describe = describe;
    this.resourceOf = resourceOf;
    this.description = ProcessDescription.of(info, resourceOf);
    this.target = target;
    this.samples = samples;
    this.ticks = ticks;
    this.cpu = cpu;
    this.lastTickNanos = nowNanos;
    this.describedNanos = nowNanos;
    this.serial = serial;
    this.hashes = hashes;
  }

  /** Its OTLP resource, as of its last cut. */
  Map<String, Object> resource() {
    return description.resource();
  }

  int pid() {
    return identity.pid();
  }

  /** The walk of its ticks; only while not retired. */
  ProcessTicks ticks() {
    if (ticks == null) {
      throw new IllegalStateException("process " + pid() + " is retired");
    }
    return ticks;
  }

  boolean retired() {
    return ticks == null;
  }

  /**
   * It exited or exec'd: its last ticks are walked, and it keeps only what the next cut needs
   * (its samples, the modules they name, its figures and counters). Its modules, runtimes and
   * walk state go now rather than at that cut: under churn an interval's exited processes
   * were most of the agent's heap (docs/benchmarks.md, "Where the agent's memory and CPU go").
   */
  void retire() {
    retire(false);
  }

  /** @param imageReplaced it exec'd: its records left are walked without live reads */
  void retire(boolean imageReplaced) {
    if (ticks == null) {
      return;
    }
    ticks.finish(imageReplaced);
    retiredFigures = Map.copyOf(ticks.figures());
    ticks = null;
    noteModules();
    if (allocations != null) {
      retiredAllocations = allocations.cut(System.currentTimeMillis() * 1_000_000L, target);
      allocations.release();
    }
    target.getAndResetCounters().forEach((k, v) -> counted.merge(k, v, Long::sum));
    target.close();
  }

  /** What the walk did beyond samples (capture_* figures). */
  Map<String, Long> figures() {
    return ticks == null ? retiredFigures : ticks.figures();
  }

  private void noteModules() {
    for (LoadedModule m : target.table().modules()) {
      String key = m.path() + "@" + Long.toHexString(m.start());
      modules.computeIfAbsent(key, k -> new ModuleInfo(m.start(), m.end(), m.fileOffset(),
          m.path(), m.buildId(), hashes.of(pid(), m)));
    }
  }

  /**
   * The samples since the last cut as one recording; null when there were none, unless
   * {@code evenEmpty}.
   */
  Recording cut(long fromEpochNanos, long toEpochNanos, long periodNanos, String mode,
      boolean evenEmpty) {
    if (allocations != null) {
      List<Sample> batch = ticks == null ? retiredAllocations
          : allocations.cut(toEpochNanos, target);
      retiredAllocations = List.of();
      if (batch.isEmpty() && !evenEmpty) {
        return null;
      }
      if (ticks != null) {
        noteModules();
      }
      // The period pprof and OTLP show: bytes between samples (1 when every call is sampled).
      return new Recording(description.info(), fromEpochNanos,
          Math.max(fromEpochNanos, toEpochNanos),
          Math.max(1, allocations.meanBytes()), "bpf-alloc", new ArrayList<>(modules.values()),
          batch, Map.of(), dev.polystack.otel.model.ValueType.ALLOCATIONS, 1);
    }
    List<Sample> batch = samples.takeNew();
    if (batch.isEmpty() && !evenEmpty) {
      return null;
    }
    if (ticks != null) {
      noteModules();
      description = description.completed(describe, resourceOf);
    }
    return new Recording(description.info(), fromEpochNanos,
        Math.max(fromEpochNanos, toEpochNanos), periodNanos, mode,
        new ArrayList<>(modules.values()), batch, Map.of());
  }

  @Override
  public void close() {
    if (allocations != null) {
      allocations.release();
    }
    samples.close();
    if (ticks != null) {
      target.close();
    }
  }
}
