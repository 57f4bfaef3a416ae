package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.ProcessEvent;
import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.host.sampling.SamplerOutcome;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.TargetCpus;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.sched.CpuPlacement;
import dev.polystack.otel.counters.Counter;
import dev.polystack.otel.counters.HostCounters;
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

  private final TargetProcess target;
  private final SamplingOptions options;
  private final SampleSink sink;
  private final TickCapture capture;
  private final ProcessTicks ticks;
  private final CpuPlacement placement = CpuPlacement.forThisProcess();
  /** Where the target ran lately, for the placement. */
  private final RecentTargetCpus targetCpus;
  /** Kernel counters as last read; they count from the capture's load, shared by sessions. */
  private final Map<String, Long> kernelSeen = new HashMap<>();
  /** Records parsed out of the ring in one poll, walked once the ring has its space back. */
  private final List<CaptureRecord> batch = new ArrayList<>();
  private long countersRead = System.nanoTime();

  public BpfSampler(TargetProcess target, SamplingOptions options, StackWalker walker,
      SampleSink sink, Runnable refreshRequest, PluginGuard guard, TickCapture capture) {
    this.target = target;
    this.options = options;
    this.sink = sink;
    this.capture = capture;
    int cpus = Runtime.getRuntime().availableProcessors();
    this.ticks = new ProcessTicks(target, options, walker, sink, refreshRequest, guard,
        ProcessTicks.PlanSlots.of(capture), cpus);
    // 8 periods (>= 50 ms): on a loaded host a CPU can go a couple of periods without a tick.
    this.targetCpus = new RecentTargetCpus(Math.max(50_000_000L, 8 * options.periodNanos()),
        cpus);
  }

  @Override
  public void openAll() throws SamplingException {
    ticks.housekeeping();
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
          public boolean poll(int timeoutMillis) {
            return drain(timeoutMillis);
          }

          @Override
          public void afterPoll(long nowNanos) {
            placement.targetRunsOn(targetCpus.at(nowNanos), nowNanos);
          }

          @Override
          public void housekeeping() {
            ticks.housekeeping();
            long now = System.nanoTime();
            if (now - countersRead >= KERNEL_COUNTERS_NANOS) {
              countersRead = now;
              countKernelLosses();
            }
          }
        });
    capture.removeTarget(target.pid());
    drain(0); // what the kernel wrote before the end still counts
    ticks.finish();
    countKernelLosses();
    placement.close();
    return new SamplerOutcome(exit.status(), ended.byUser(), ended.targetGone(), counters());
  }

  /**
   * Copies the ready records out of the ring first, so the kernel gets the space back early;
   * false when there were none.
   */
  private boolean drain(int timeoutMillis) {
    batch.clear();
    capture.poll(timeoutMillis, bytes -> {
      if (ProcessEvent.isEvent(bytes)) {
        return; // a followed process's events: a record of one process asks for none
      }
      try {
        batch.add(CaptureRecord.parse(bytes));
      } catch (IllegalArgumentException e) {
        sink.lost(HostCounters.MALFORMED_RECORD);
      }
    });
    boolean any = false;
    for (CaptureRecord r : batch) {
      if (r.tgid() != target.pid()) {
        continue; // another session's process, or this one's from before a restart
      }
      any = true;
      if (options.threads().isEmpty() || options.threads().contains(r.tid())) {
        targetCpus.ticked(r.cpu(), r.tid(), r.monotonicNanos());
      }
      ticks.accept(r);
    }
    ticks.afterBatch(any);
    boolean read = !batch.isEmpty();
    batch.clear();
    return read;
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
   * walk's figures.
   */
  private Map<String, Long> counters() {
    Map<String, Long> out = new java.util.TreeMap<>();
    kernelSeen.forEach((k, v) -> {
      Counter counter = HostCounters.kernel(k);
      if (v > 0 && !counter.isLoss()) {
        out.put(counter.name(), v);
      }
    });
    out.putAll(ticks.figures());
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
