package dev.polystack.host.sampling;

import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.PlanOutcome;
import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.RemoteMemory;
import dev.polystack.plugin.api.ThreadContext;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * One thread as captured for one sample; handed to plug-ins as their {@link ThreadContext}.
 *
 * @param fsBase the thread's FS base (its thread pointer), 0 where the capture has none
 * @param outcomes what the process's capture plans did at the tick (bpf mode)
 */
public record CapturedThread(int pid, int tid, Registers registers, RemoteMemory memory,
    long stackStart, int stackLength, long fsBase, List<PlanOutcome> outcomes)
    implements ThreadContext {

  public CapturedThread {
    outcomes = List.copyOf(outcomes);
  }

  /** A thread captured without a thread pointer or plans. */
  public CapturedThread(int pid, int tid, Registers registers, RemoteMemory memory,
      long stackStart, int stackLength) {
    this(pid, tid, registers, memory, stackStart, stackLength, 0, List.of());
  }

  @Override
  public OptionalLong threadPointer() {
    return fsBase == 0 ? OptionalLong.empty() : OptionalLong.of(fsBase);
  }

  @Override
  public Optional<PlanOutcome> planOutcome(CapturePlan plan) {
    for (PlanOutcome o : outcomes) {
      if (o.plan().equals(plan)) {
        return Optional.of(o);
      }
    }
    return Optional.empty();
  }
}
