package dev.polystack.luajit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CaptureStep;
import java.util.List;
import org.junit.jupiter.api.Test;

class CapturePlansTest {

  /** Every global_State layout the plug-in knows, upstream and OpenResty lua_State sizes. */
  @Test
  void everyKnownLayoutGivesAPlanWithinTheBounds() {
    for (int curL : List.of(344, 360, 368, 376)) {
      for (int stateSize : List.of(96, 112)) {
        Layout layout = Layout.forCurL(curL, stateSize);
        CapturePlan plan = CapturePlans.forVm(0x7f00_0000_1000L, layout);
        assertTrue(plan.steps().size() <= CapturePlan.MAX_STEPS);
        List<CaptureStep.Copy> copies = plan.steps().stream()
            .filter(s -> s instanceof CaptureStep.Copy).map(s -> (CaptureStep.Copy) s).toList();
        assertTrue(plan.steps().size() > 32, "needs API 1.8: " + plan.steps().size());
        assertEquals(List.of("global_state", "lua_state", "lua_stack", "resumer_state",
            "resumer_function", "resumer_stack"),
            copies.stream().map(CaptureStep.Copy::label).toList());
        CaptureStep.Copy g = copies.get(0);
        // The copy of GG_State starts at the main lua_State and reaches past jit_base.
        assertEquals(-stateSize, g.offset());
        assertTrue(g.maxBytes() >= stateSize + layout.jitBase() + 8);
        assertEquals(stateSize, copies.get(1).maxBytes());
        assertEquals(stateSize, copies.get(3).maxBytes());
        assertTrue(copies.size() <= CapturePlan.MAX_COPIES);
      }
    }
  }

  @Test
  void thePlanChecksCurLAgainstGBeforeCopying() {
    CapturePlan plan = CapturePlans.forVm(0x10000, Layout.forCurL(368, 96));
    int firstCopy = -1;
    int check = -1;
    for (int i = 0; i < plan.steps().size(); i++) {
      if (plan.steps().get(i) instanceof CaptureStep.Copy && firstCopy < 0) {
        firstCopy = i;
      }
      if (plan.steps().get(i) instanceof CaptureStep.Check c && c.equal() && check < 0) {
        check = i;
      }
    }
    assertTrue(check >= 0 && check < firstCopy, "check " + check + ", first copy " + firstCopy);
  }
}
