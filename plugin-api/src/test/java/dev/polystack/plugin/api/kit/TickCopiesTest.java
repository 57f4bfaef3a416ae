package dev.polystack.plugin.api.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CapturedRegion;
import dev.polystack.plugin.api.Mapping;
import dev.polystack.plugin.api.PlanOutcome;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The kit's replay of the data-following steps (API 1.6) on laid-out memory; the kernel's side
 * of the same plans is TickCaptureTest.plansFollowData in host.
 */
class TickCopiesTest {
  private static final long DATA = 0x10000;
  private static final long TABLE = DATA;
  private static final long NODES = DATA + 0x100;
  private static final long UNMAPPED = 0x8000;
  private static final int TID = 4242;

  /** table[i] = 0x7ab1e000 + i for i < 8; five 16-byte nodes {tag, next} linked in order. */
  private static final byte[] MEMORY = memory();

  private static byte[] memory() {
    ByteBuffer b = ByteBuffer.allocate(0x200).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < 8; i++) {
      b.putLong(8 * i, 0x7ab1e000L + i);
    }
    for (int i = 0; i < 5; i++) {
      b.putLong(0x100 + 16 * i, 0xc0de0000L + i);
      b.putLong(0x100 + 16 * i + 8, i < 4 ? NODES + 16 * (i + 1) : 0);
    }
    return b.array();
  }

  private static TickCopies run(CapturePlan plan) {
    MemoryBlob process = MemoryBlob.of(List.of(new MemoryBlob.Range(DATA, MEMORY)));
    MemoryBlob thread = MemoryBlob.of(List.of());
    Registers regs = Registers.of(new long[Register.values().length]).with(Register.RSP, 0x7000);
    List<Mapping> maps = List.of(
        new Mapping(DATA, DATA + 0x1000, 0, true, true, false, 0, 0, "[data]", false));
    return TickCopies.of(List.of(plan), regs, TID, null, thread, process, maps);
  }

  @Test
  void theThreadIdIsTheCasesTid() {
    CapturePlan mine = CapturePlan.builder()
        .threadId("tid")
        .constant("want", TID)
        .checkEquals("tid", "want")
        .constant("base", TABLE)
        .copy("base", 0, 8, "mine")
        .build();
    TickCopies tick = run(mine);
    assertEquals(List.of(), tick.stops());
    CapturePlan other = CapturePlan.builder()
        .threadId("tid")
        .constant("want", TID + 1)
        .checkEquals("tid", "want")
        .build();
    assertEquals(1, run(other).stops().size(), "another thread's id stops the plan at the check");
  }

  @Test
  void arithmeticAndIndexedLoadsFollowTheTable() {
    CapturePlan plan = CapturePlan.builder()
        .constant("base", TABLE)
        .constant("index", 5)
        .loadIndexed("value", "base", "index", 8, 0, 8)
        .constant("want", 0x7ab1e005L)
        .checkEquals("value", "want")
        .shiftLeft("offset", "index", 3)
        .addSlots("address", "base", "offset")
        .load("value", "address", 0, 8)
        .checkEquals("value", "want")
        .multiply("value", "index", 8)
        .checkEquals("value", "offset")
        .shiftRight("value", "offset", 3)
        .checkEquals("value", "index")
        .copy("address", 0, 8, "element")
        .build();
    TickCopies tick = run(plan);
    assertEquals(List.of(), tick.stops());
    TickCopies.Region element = tick.regions().get(0);
    assertEquals(TABLE + 40, element.address());
    assertEquals(8, element.length());
  }

  @Test
  void aChainCopiesEachRecordAndHandsOnWhereItStopped() {
    CapturePlan plan = CapturePlan.builder()
        .constant("head", NODES)
        .chain("rest", "head", 0, 16, 8, 3, "node")
        .constant("third", NODES + 48)
        .checkEquals("rest", "third")
        .chain("end", "rest", 0, 8, 8, CapturePlan.MAX_CHAIN_HOPS, "node")
        .constant("zero", 0)
        .checkEquals("end", "zero")
        .build();
    TickCopies tick = run(plan);
    assertEquals(List.of(), tick.stops());
    List<TickCopies.Region> nodes = tick.regions();
    assertEquals(5, nodes.size(), nodes.toString());
    for (int i = 0; i < 5; i++) {
      assertEquals(NODES + 16 * i, nodes.get(i).address());
      assertEquals(i < 3 ? 16 : 8, nodes.get(i).length());
      assertEquals(i < 3 ? 1 : 4, nodes.get(i).step());
    }
    PlanOutcome outcome = tick.outcomes(List.of(plan)).get(0);
    assertTrue(outcome.completed());
    assertEquals(5, outcome.regions().size());
    assertEquals(new CapturedRegion(NODES + 48, 8, 4, "node"), outcome.regions().get(3));
  }

  @Test
  void anUnreadableIndexedLoadStopsThePlanAndANextPointerOutsideTheSnapshotIsUndecidable() {
    CapturePlan unreadable = CapturePlan.builder()
        .constant("base", UNMAPPED)
        .constant("index", 1)
        .loadIndexed("value", "base", "index", 8, 0, 8)
        .build();
    TickCopies tick = run(unreadable);
    assertEquals(1, tick.stops().size());
    assertEquals(2, tick.stops().get(0).step());
    assertTrue(tick.decidable(), "an unmapped address stops the kernel's plan too");
    PlanOutcome stopped = tick.outcomes(List.of(unreadable)).get(0);
    assertEquals(PlanOutcome.Stop.LOAD, stopped.stop());
    assertEquals(2, stopped.stoppedAtStep());

    CapturePlan intoTheGap = CapturePlan.builder()
        .constant("record", DATA + 0x800)
        .chain("next", "record", 0, 8, 8, 2, "node")
        .build();
    TickCopies gap = run(intoTheGap);
    assertFalse(gap.decidable(), "mapped but never recorded: the kit cannot know the pointer");
    assertEquals(List.of(), gap.outcomes(List.of(intoTheGap)), "no outcome it cannot know");
  }
}
