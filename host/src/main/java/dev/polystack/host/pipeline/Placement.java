package dev.polystack.host.pipeline;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.sched.CpuPlacement;
import dev.polystack.host.sched.RecentTargetCpus;

/**
 * In a record, keeps polystack's threads off the CPUs the recorded threads ran on lately, read
 * from the ticks' CPU numbers, so the recording does not take CPU from what it measures
 * (docs/architecture.md, "Threads"). The agent watches every process and places nothing.
 */
final class Placement implements AutoCloseable {
  private final CpuPlacement placement = CpuPlacement.forThisProcess();
  private final RecentTargetCpus recent;
  private final java.util.Set<Integer> threads;

  Placement(PipelineOptions options) {
    if (!options.record()) {
      throw new IllegalArgumentException("placement is for a record");
    }
    this.threads = options.threads();
    // 8 periods (>= 50 ms): on a loaded host a CPU can go a couple of periods without a tick.
    this.recent = new RecentTargetCpus(Math.max(50_000_000L,
        8 * options.sampling().periodNanos()), Runtime.getRuntime().availableProcessors());
  }

  /** A tick of a recorded process. */
  void ticked(CaptureRecord r) {
    if (threads.isEmpty() || threads.contains(r.tid())) {
      recent.ticked(r.cpu(), r.tid(), r.monotonicNanos());
    }
  }

  /** After a poll: moves polystack if the recorded threads moved. */
  void place(long nowNanos) {
    placement.targetRunsOn(recent.at(nowNanos), nowNanos);
  }

  @Override
  public void close() {
    placement.close();
  }
}
