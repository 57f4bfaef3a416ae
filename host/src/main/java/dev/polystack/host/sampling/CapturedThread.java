package dev.polystack.host.sampling;

import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.PlanOutcome;
import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.RemoteMemory;
import dev.polystack.plugin.api.ThreadContext;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;

/**
 * One thread as captured for one sample; handed to plug-ins as their {@link ThreadContext}.
 *
 * @param fsBase the thread's FS base (its thread pointer), 0 where the capture has none
 * @param outcomes what each capture plan did at the tick (bpf mode), worked out when asked
 */
public record CapturedThread(int pid, int tid, Registers registers, RemoteMemory memory,
    long stackStart, int stackLength, long fsBase,
    Function<CapturePlan, Optional<PlanOutcome>> outcomes) implements ThreadContext {

  /** For a capture that ran no plans (perf and ptrace modes, replays). */
  public static final Function<CapturePlan, Optional<PlanOutcome>> NO_PLANS =
      plan -> Optional.empty();

  public CapturedThread {
    Objects.requireNonNull(outcomes, "outcomes");
  }

  /** A thread captured without a thread pointer or plans. */
  public CapturedThread(int pid, int tid, Registers registers, RemoteMemory memory,
      long stackStart, int stackLength) {
    this(pid, tid, registers, memory, stackStart, stackLength, 0, NO_PLANS);
  }

  @Override
  public OptionalLong threadPointer() {
    return fsBase == 0 ? OptionalLong.empty() : OptionalLong.of(fsBase);
  }

  @Override
  public Optional<PlanOutcome> planOutcome(CapturePlan plan) {
    return outcomes.apply(plan);
  }
}
