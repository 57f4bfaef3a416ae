package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.PlanEncoder;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.process.RuntimeBinding;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.CapturePlan;
import java.util.ArrayList;
import java.util.List;

/**
 * The runtimes' capture plans of one process and their place in the kernel, for both programs
 * that capture a stack (the tick's {@link ProcessTicks}, the allocation's {@link AllocSampler}).
 */
final class RuntimePlans {
  private RuntimePlans() {}

  /** The distinct plans the process's runtimes ask for, at most {@code max}, in binding order. */
  static List<CapturePlan> wanted(TargetProcess target, PluginGuard guard, int max) {
    List<CapturePlan> wanted = new ArrayList<>();
    for (RuntimeBinding b : target.table().bindings()) {
      if (!b.plugin().descriptor().capabilities().contains(Capability.CAPTURE_AT_TICK)) {
        continue;
      }
      CapturePlan plan = guard.call(b.plugin(), "capturePlan", b.instance()::capturePlan)
          .orElse(CapturePlan.NONE);
      if (!plan.isEmpty() && wanted.size() < max && !wanted.contains(plan)) {
        wanted.add(plan);
      }
    }
    return wanted;
  }

  /**
   * Puts {@code wanted} in the process's plan slots unless {@code installed} already is that;
   * returns what the slots hold afterwards. A refusal is counted and leaves {@code installed}.
   */
  static List<CapturePlan> install(ProcessTicks.PlanSlots slots, int pid,
      List<CapturePlan> wanted, List<CapturePlan> installed, SampleSink sink) {
    if (wanted.equals(installed)) {
      return installed;
    }
    try {
      slots.clearPlans(pid);
      for (int i = 0; i < wanted.size(); i++) {
        slots.setPlan(pid, i, PlanEncoder.encode(wanted.get(i)));
      }
      return List.copyOf(wanted);
    } catch (RuntimeException e) {
      sink.lost(HostCounters.CAPTURE_PLAN_REFUSED);
      return installed;
    }
  }
}
