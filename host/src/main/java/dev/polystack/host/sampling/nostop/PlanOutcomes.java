package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.PlanEncoder;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CapturedRegion;
import dev.polystack.plugin.api.PlanOutcome;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * What each installed plug-in plan did at a record's tick, as plug-ins see it through {@code
 * ThreadContext.planOutcome}. The record names plans by slot, so a record taken before the slots
 * last changed is read against the plans installed now: the first records after a plan change
 * may carry the previous plan's outcome under the new plan (docs/capture-plans.md, "What a walk
 * sees").
 */
final class PlanOutcomes {
  private PlanOutcomes() {}

  /**
   * The outcome of each plan of {@code installed} the record ran, worked out only when a walk
   * asks for it: most walks never do, and every sample of bpf mode comes through here.
   */
  static Function<CapturePlan, Optional<PlanOutcome>> of(CaptureRecord r,
      List<CapturePlan> installed) {
    return plan -> outcome(r, installed.indexOf(plan), plan);
  }

  /** What the record says of its plan {@code i}; empty if it did not run it or is malformed. */
  private static Optional<PlanOutcome> outcome(CaptureRecord r, int i, CapturePlan plan) {
    if (i < 0 || i >= r.planStops().length) {
      return Optional.empty();
    }
    List<String> labels = PlanEncoder.labels(plan);
    int stop = r.planStops()[i];
    int step = (stop & 0xff) - 1;
    if (step >= labels.size()) {
      return Optional.empty();
    }
    PlanOutcome.Stop why = step < 0 ? PlanOutcome.Stop.NONE : switch (stop >>> 8) {
      case CaptureRecord.STOP_LOAD -> PlanOutcome.Stop.LOAD;
      case CaptureRecord.STOP_CHECK -> PlanOutcome.Stop.CHECK;
      default -> PlanOutcome.Stop.INVALID;
    };
    List<CapturedRegion> regions = new ArrayList<>();
    for (CaptureRecord.Region g : r.regions()) {
      String label = g.plan() == i && g.step() < labels.size() ? labels.get(g.step()) : null;
      if (label != null && g.bytes().length > 0) {
        regions.add(new CapturedRegion(g.address(), g.bytes().length, g.step(), label));
      }
    }
    return Optional.of(new PlanOutcome(plan, Math.max(step, -1), why, regions));
  }
}
