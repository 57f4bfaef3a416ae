package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CaptureStep;
import dev.polystack.plugin.api.CapturedRegion;
import dev.polystack.plugin.api.PlanOutcome;
import java.util.ArrayList;
import java.util.List;

/**
 * What each installed plug-in plan did at a record's tick, as plug-ins see it through {@code
 * ThreadContext.planOutcome}. The record names plans by slot, so a record taken before the slots
 * last changed is read against the plans installed now: the first records after a plan change
 * may carry the previous plan's outcome under the new plan (docs/capture-plans.md, "What a walk
 * sees").
 */
final class PlanOutcomes {
  private PlanOutcomes() {}

  /** One outcome per plan of {@code installed} the record ran; a malformed entry is left out. */
  static List<PlanOutcome> of(CaptureRecord r, List<CapturePlan> installed) {
    int n = Math.min(r.planStops().length, installed.size());
    List<PlanOutcome> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      CapturePlan plan = installed.get(i);
      List<CaptureStep> steps = plan.steps();
      int stop = r.planStops()[i];
      int step = (stop & 0xff) - 1;
      if (step >= steps.size()) {
        continue;
      }
      PlanOutcome.Stop why = step < 0 ? PlanOutcome.Stop.NONE : switch (stop >>> 8) {
        case CaptureRecord.STOP_LOAD -> PlanOutcome.Stop.LOAD;
        case CaptureRecord.STOP_CHECK -> PlanOutcome.Stop.CHECK;
        default -> PlanOutcome.Stop.INVALID;
      };
      List<CapturedRegion> regions = new ArrayList<>();
      for (CaptureRecord.Region g : r.regions()) {
        if (g.plan() == i && g.bytes().length > 0 && g.step() < steps.size()) {
          String label = label(steps.get(g.step()));
          if (label != null) {
            regions.add(new CapturedRegion(g.address(), g.bytes().length, g.step(), label));
          }
        }
      }
      out.add(new PlanOutcome(plan, Math.max(step, -1), why, regions));
    }
    return out;
  }

  private static String label(CaptureStep step) {
    if (step instanceof CaptureStep.Copy c) {
      return c.label();
    }
    return step instanceof CaptureStep.Chain c ? c.label() : null;
  }
}
