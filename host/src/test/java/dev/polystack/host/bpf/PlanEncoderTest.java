package dev.polystack.host.bpf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Register;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** The struct plan layout of tick_capture.bpf.c, byte by byte. */
class PlanEncoderTest {

  @Test
  void encodesEachStepAsTheKernelProgramReadsIt() {
    CapturePlan plan = CapturePlan.builder()
        .register("sp", Register.RSP)
        .constant("G", 0x7f0012345678L)
        .load("L", "G", 0x170, 8)
        .keepIfInRange("sp", "L", "G", "G")
        .checkNotEquals("L", "G")
        .copy("L", -8, "sp", 4096, "lua_state")
        .and("G", "G", 0xfff)
        .threadPointer("tp")
        .build();
    ByteBuffer b = ByteBuffer.wrap(PlanEncoder.encode(plan)).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(PlanEncoder.PLAN_SIZE, b.capacity());
    assertEquals(1160, PlanEncoder.PLAN_SIZE);
    assertEquals(8, b.getInt(0));
    assertStep(b, 0, PlanEncoder.OP_REG, 0, Register.RSP.ordinal(), 0xff, 0xff, 0, 0, 0);
    assertStep(b, 1, PlanEncoder.OP_CONST, 1, 0xff, 0xff, 0xff, 0, 0, 0x7f0012345678L);
    assertStep(b, 2, PlanEncoder.OP_LOAD, 2, 1, 0xff, 0xff, 8, 0, 0x170);
    assertStep(b, 3, PlanEncoder.OP_IN_RANGE_OR, 0, 2, 1, 1, 0, 0, 0);
    assertStep(b, 4, PlanEncoder.OP_CHECK_NE, 0xff, 2, 1, 0xff, 0, 0, 0);
    assertStep(b, 5, PlanEncoder.OP_COPY, 0xff, 2, 0, 0xff, 0, 4096, -8);
    assertStep(b, 6, PlanEncoder.OP_AND, 1, 1, 0xff, 0xff, 0, 0, 0xfff);
    assertStep(b, 7, PlanEncoder.OP_TP, 3, 0xff, 0xff, 0xff, 0, 0, 0);
    assertEquals(0, b.get(8 + 8 * PlanEncoder.STEP_SIZE), "unused steps stay zero");
  }

  private static void assertStep(ByteBuffer b, int index, int op, int dst, int a, int bSlot,
      int c, int size, int max, long imm) {
    int at = 8 + index * PlanEncoder.STEP_SIZE;
    String where = "step " + index;
    assertEquals(op, b.get(at) & 0xff, where + " op");
    assertEquals(dst, b.get(at + 1) & 0xff, where + " dst");
    assertEquals(a, b.get(at + 2) & 0xff, where + " a");
    assertEquals(bSlot, b.get(at + 3) & 0xff, where + " b");
    assertEquals(c, b.get(at + 4) & 0xff, where + " c");
    assertEquals(size, b.get(at + 5) & 0xff, where + " size");
    assertEquals(max, b.getInt(at + 8), where + " max");
    assertEquals(imm, b.getLong(at + 16), where + " imm");
  }
}
