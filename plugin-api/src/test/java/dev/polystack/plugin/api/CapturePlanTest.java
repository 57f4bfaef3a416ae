package dev.polystack.plugin.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CapturePlanTest {

  @Test
  void builderNamesSlotsInOrderOfFirstAssignment() {
    CapturePlan plan = CapturePlan.builder()
        .constant("G", 0x1000)
        .load("L", "G", 0x170, 8)
        .load("t", "L", 16, 8)
        .checkEquals("t", "G")
        .copy("L", 0, 96, "lua_state")
        .build();
    assertEquals(List.of(
        new CaptureStep.Constant(0, 0x1000),
        new CaptureStep.Load(1, 0, 0x170, 8),
        new CaptureStep.Load(2, 1, 16, 8),
        new CaptureStep.Check(2, 0, true),
        new CaptureStep.Copy(1, 0, -1, 96, "lua_state")), plan.steps());
  }

  @Test
  void equalPlansAreEqualSoTheHostRecompilesOnlyOnChange() {
    CapturePlan a = CapturePlan.builder().constant("G", 1).copy("G", 0, 8, "g").build();
    CapturePlan b = CapturePlan.builder().constant("G", 1).copy("G", 0, 8, "g").build();
    CapturePlan c = CapturePlan.builder().constant("G", 2).copy("G", 0, 8, "g").build();
    assertEquals(a, b);
    assertEquals(a.hashCode(), b.hashCode());
    assertNotEquals(a, c);
    assertTrue(CapturePlan.NONE.isEmpty());
  }

  @Test
  void readingAnUnassignedNameIsRefused() {
    var e = assertThrows(IllegalArgumentException.class,
        () -> CapturePlan.builder().load("L", "G", 0, 8));
    assertEquals("'G' is read before it is assigned", e.getMessage());
  }

  @Test
  void aNinthNameIsRefused() {
    CapturePlan.Builder b = CapturePlan.builder();
    for (int i = 0; i < CapturePlan.SLOTS; i++) {
      b.constant("v" + i, i);
    }
    var e = assertThrows(IllegalArgumentException.class, () -> b.constant("one_more", 9));
    assertTrue(e.getMessage().startsWith("a capture plan has 8 slots"), e.getMessage());
  }

  @Test
  void boundsAreCheckedWhereStepsAreMade() {
    assertThrows(IllegalArgumentException.class, () -> new CaptureStep.Load(0, 0, 0, 3));
    assertThrows(IllegalArgumentException.class, () -> new CaptureStep.Constant(8, 0));
    assertThrows(IllegalArgumentException.class,
        () -> new CaptureStep.Copy(0, 0, -1, CapturePlan.MAX_COPY_BYTES + 1, "big"));
    assertThrows(IllegalArgumentException.class, () -> new CaptureStep.Copy(0, 0, -1, 8, ""));
    List<CaptureStep> tooMany = new ArrayList<>();
    for (int i = 0; i <= CapturePlan.MAX_STEPS; i++) {
      tooMany.add(new CaptureStep.Constant(0, i));
    }
    assertThrows(IllegalArgumentException.class, () -> new CapturePlan(tooMany));
    List<CaptureStep> copies = new ArrayList<>();
    for (int i = 0; i <= CapturePlan.MAX_COPIES; i++) {
      copies.add(new CaptureStep.Copy(0, 0, -1, 8, "c" + i));
    }
    assertThrows(IllegalArgumentException.class, () -> new CapturePlan(copies));
  }

  @Test
  void dataFollowingStepsCheckTheirBounds() {
    assertThrows(IllegalArgumentException.class, () -> new CaptureStep.ShiftLeft(0, 1, 64));
    assertThrows(IllegalArgumentException.class, () -> new CaptureStep.ShiftRight(0, 1, -1));
    assertThrows(IllegalArgumentException.class, () -> new CaptureStep.AddSlots(0, 1, 8));
    assertThrows(IllegalArgumentException.class,
        () -> new CaptureStep.LoadIndexed(0, 1, 2, 0, 0, 8));
    assertThrows(IllegalArgumentException.class,
        () -> new CaptureStep.LoadIndexed(0, 1, 2, CapturePlan.MAX_SCALE + 1, 0, 8));
    assertThrows(IllegalArgumentException.class,
        () -> new CaptureStep.LoadIndexed(0, 1, 2, 8, 0, 3));
    assertThrows(IllegalArgumentException.class,
        () -> new CaptureStep.Chain(0, 1, 0, 8, 8, CapturePlan.MAX_CHAIN_HOPS + 1, "frame"));
    assertThrows(IllegalArgumentException.class,
        () -> new CaptureStep.Chain(0, 1, 0, CapturePlan.MAX_CHAIN_COPY_BYTES + 1, 8, 4, "f"));
    assertThrows(IllegalArgumentException.class,
        () -> new CaptureStep.Chain(0, 1, 0, 8, 8, 0, "frame"));
    // A chain is a copy step for the plan's bound on copies.
    List<CaptureStep> copies = new ArrayList<>();
    for (int i = 0; i < CapturePlan.MAX_COPIES; i++) {
      copies.add(new CaptureStep.Copy(0, 0, -1, 8, "c" + i));
    }
    copies.add(new CaptureStep.Chain(0, 0, 0, 8, 8, 2, "one more"));
    assertThrows(IllegalArgumentException.class, () -> new CapturePlan(copies));
  }

  @Test
  void theBuilderNamesTheSlotsOfDataFollowingSteps() {
    CapturePlan plan = CapturePlan.builder()
        .register("sp", Register.RSP)
        .constant("index", 3)
        .shiftLeft("offset", "index", 3)
        .addSlots("at", "sp", "offset")
        .loadIndexed("frame", "sp", "index", 8, 16, 8)
        .chain("rest", "frame", 0, 64, 8, 4, "frames")
        .build();
    assertEquals(List.of(
        new CaptureStep.ReadRegister(0, Register.RSP),
        new CaptureStep.Constant(1, 3),
        new CaptureStep.ShiftLeft(2, 1, 3),
        new CaptureStep.AddSlots(3, 0, 2),
        new CaptureStep.LoadIndexed(4, 0, 1, 8, 16, 8),
        new CaptureStep.Chain(5, 4, 0, 64, 8, 4, "frames")), plan.steps());
  }
}
