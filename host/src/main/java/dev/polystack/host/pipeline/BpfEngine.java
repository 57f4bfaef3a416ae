package dev.polystack.host.pipeline;

import dev.polystack.host.alloc.ByteSampling;
import dev.polystack.host.bpf.AllocRecord;
import dev.polystack.host.bpf.AllocationProbes;
import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.ProcessEvent;
import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.sampling.nostop.ProcessTicks;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The bpf engine: the tick capture program on every CPU, host-wide or for selected processes,
 * with exec and exit of its targets (and every exec, when a selection by name may gain a
 * process) as events in the same ring.
 */
final class BpfEngine implements CaptureEngine {
  /** Ring sizes: see {@link #ringBytes}. */
  static final int MIN_RING_BYTES = 2 << 20;
  static final int MAX_RING_BYTES = 64 << 20;
  /** Room per tick: a 16 KiB stack copy, twice over for plans' regions and learned pages. */
  private static final long BYTES_PER_TICK = 32 << 10;

  private final int rateHz;
  private final TickCapture.Settings settings;
  /** Allocations instead of ticks: one sample per this many bytes (0: every call); -1: ticks. */
  private final long allocMeanBytes;
  private TickCapture capture;
  /** Selected before start. */
  private final java.util.Map<Integer, Boolean> pending = new java.util.LinkedHashMap<>();

  BpfEngine(int rateHz, TickCapture.Settings settings) {
    this(rateHz, settings, -1);
  }

  /** @param allocMeanBytes allocations instead of ticks (0: every call); -1: ticks */
  BpfEngine(int rateHz, TickCapture.Settings settings, long allocMeanBytes) {
    if (rateHz < 1 || rateHz > 10_000) {
      throw new IllegalArgumentException("rate must be 1..10000 Hz: " + rateHz);
    }
    if (allocMeanBytes >= 0 && settings.allProcesses()) {
      throw new IllegalArgumentException("allocations are probed in selected processes only");
    }
    this.rateHz = rateHz;
    this.settings = java.util.Objects.requireNonNull(settings, "settings");
    this.allocMeanBytes = allocMeanBytes;
  }

  @Override
  public boolean selectsInKernel() {
    return settings.allProcesses();
  }

  /** Host-wide the tick program wakes the reader at each program's first tick. */
  @Override
  public boolean wakesAtFirstTick() {
    return settings.allProcesses();
  }

  @Override
  public String name() {
    return "bpf";
  }

  /**
   * The ring holds about a second of every CPU's ticks at the rate (a power of two, 2 to 64 MiB):
   * the reader is woken when it is a quarter full, and RSS counts its pages twice (they are
   * mapped twice so records never wrap), so a fixed 8 MiB ring was 16 MiB of an idle 2-CPU
   * agent's memory and a quarter of a second of a 64-CPU host's ticks (docs/operations.md).
   */
  static int ringBytes(int cpus, int rateHz) {
    long need = Math.max(1, cpus) * (long) rateHz * BYTES_PER_TICK;
    long bytes = MIN_RING_BYTES;
    while (bytes < need && bytes < MAX_RING_BYTES) {
      bytes <<= 1;
    }
    return (int) bytes;
  }

  @Override
  public Optional<String> check() {
    return BpfSupport.unavailableReason();
  }

  @Override
  public synchronized void start() throws EngineException {
    if (capture != null) {
      throw new IllegalStateException("already started");
    }
    try {
      boolean alloc = allocMeanBytes >= 0;
      int cpus = TickCapture.onlineCpus().size();
      capture = TickCapture.open(rateHz, ringBytes(cpus, rateHz), c -> {
        c.configure(settings);
        if (alloc) {
          AllocationProbes probes = c.allocations();
          probes.configure(allocMeanBytes, settings.stackBytes(),
              ByteSampling.table(allocMeanBytes));
          // A site's cookie is its kind's code, the same in every process.
          for (AllocationProbes.Kind k : AllocationProbes.Kind.values()) {
            probes.setSite(k.code(), k);
          }
        }
        pending.forEach((pid, follow) -> c.addTarget(pid, settings.stackBytes(), follow));
      }, EnumSet.of(alloc ? TickCapture.Feature.ALLOC : TickCapture.Feature.TICKS));
      pending.clear();
    } catch (BpfLoadException | RuntimeException e) {
      if (capture != null) {
        capture.close();
        capture = null;
      }
      throw new EngineException(e.getMessage());
    }
  }

  /**
   * Reads what the ring holds, then hands it over in ring order, after telling the listener of
   * the batch's execs: a tick read after its process exec'd must not be walked on the new
   * program's memory (docs/architecture.md, "The host-wide pipeline").
   */
  @Override
  public void poll(int timeoutMillis, Listener listener) {
    List<Consumer<Listener>> batch = new ArrayList<>();
    capture().poll(timeoutMillis, bytes -> {
      try {
        if (ProcessEvent.isEvent(bytes)) {
          ProcessEvent e = ProcessEvent.parse(bytes);
          batch.add(l -> l.event(e));
          if (e.kind() == ProcessEvent.Kind.EXEC) {
            listener.imageReplaced(e.tgid(), e.monotonicNanos());
          }
        } else if (AllocRecord.isAllocation(bytes)) {
          AllocRecord r = AllocRecord.parse(bytes);
          batch.add(l -> l.allocation(r));
        } else if (AllocRecord.isDefinition(bytes)) {
          long digest = AllocRecord.definitionDigest(bytes);
          CaptureRecord r = CaptureRecord.parse(bytes);
          batch.add(l -> l.allocationStack(digest, r));
        } else {
          CaptureRecord r = CaptureRecord.parse(bytes);
          batch.add(l -> l.tick(r));
        }
      } catch (IllegalArgumentException e) {
        batch.add(Listener::malformed);
      }
    });
    batch.forEach(item -> item.accept(listener));
  }

  /** Before {@link #start}: captured from the first tick of every CPU. */
  @Override
  public synchronized void select(int pid, boolean followChildren) {
    if (capture == null) {
      pending.put(pid, followChildren);
      return;
    }
    capture.addTarget(pid, settings.stackBytes(), followChildren);
  }

  @Override
  public void deselect(int pid) {
    capture().removeTarget(pid);
  }

  @Override
  public ProcessTicks.PlanSlots planSlots() {
    return ProcessTicks.PlanSlots.of(capture());
  }

  @Override
  public Optional<AllocationProbes> allocations() {
    return allocMeanBytes < 0 ? Optional.empty() : Optional.of(capture().allocations());
  }

  @Override
  public Map<String, Long> counters() {
    return capture().counters();
  }

  private synchronized TickCapture capture() {
    if (capture == null) {
      throw new IllegalStateException("engine not started");
    }
    return capture;
  }

  @Override
  public synchronized void close() {
    if (capture != null) {
      capture.close();
    }
  }
}
