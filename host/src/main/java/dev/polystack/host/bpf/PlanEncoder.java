package dev.polystack.host.bpf;

import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CaptureStep;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Compiles a plug-in's {@link CapturePlan} into the {@code struct plan} the tick-capture program
 * interprets (tick_capture.bpf.c; layout in docs/capture-plans.md). The plan's bounds are the
 * program's, so every valid plan encodes.
 */
public final class PlanEncoder {
  static final int STEP_SIZE = 24;
  /** sizeof(struct plan): nsteps, pad, then the steps. */
  public static final int PLAN_SIZE = 8 + CapturePlan.MAX_STEPS * STEP_SIZE;

  static final int OP_REG = 1;
  static final int OP_CONST = 2;
  static final int OP_ADD = 3;
  static final int OP_SUB = 4;
  static final int OP_MAX = 5;
  static final int OP_MIN = 6;
  static final int OP_LOAD = 7;
  static final int OP_IN_RANGE_OR = 8;
  static final int OP_CHECK_EQ = 9;
  static final int OP_CHECK_NE = 10;
  static final int OP_AND = 11;
  static final int OP_COPY = 12;
  static final int OP_TP = 13;
  static final int OP_SHL = 14;
  static final int OP_SHR = 15;
  static final int OP_MUL = 16;
  static final int OP_ADD_SLOTS = 17;
  static final int OP_LOAD_INDEXED = 18;
  static final int OP_CHAIN = 19;
  static final int OP_TID = 20;
  private static final int NONE = 0xff;

  private PlanEncoder() {}

  /** The map value for {@code plan}. */
  public static byte[] encode(CapturePlan plan) {
    ByteBuffer b = ByteBuffer.allocate(PLAN_SIZE).order(ByteOrder.LITTLE_ENDIAN);
    List<CaptureStep> steps = plan.steps();
    b.putInt(0, steps.size());
    for (int i = 0; i < steps.size(); i++) {
      put(b, 8 + i * STEP_SIZE, steps.get(i));
    }
    return b.array();
  }

  /** Copy and chain labels by step index (null for other steps), to name captured regions. */
  public static List<String> labels(CapturePlan plan) {
    List<String> out = new ArrayList<>();
    for (CaptureStep s : plan.steps()) {
      out.add(s instanceof CaptureStep.Copy c ? c.label()
          : s instanceof CaptureStep.Chain c ? c.label() : null);
    }
    return out;
  }

  private static void put(ByteBuffer b, int at, CaptureStep step) {
    if (step instanceof CaptureStep.ReadRegister s) {
      write(b, at, OP_REG, s.into(), s.register().ordinal(), NONE, NONE, 0, 0, 0, 0);
    } else if (step instanceof CaptureStep.Constant s) {
      write(b, at, OP_CONST, s.into(), NONE, NONE, NONE, 0, 0, 0, s.value());
    } else if (step instanceof CaptureStep.ThreadPointer s) {
      write(b, at, OP_TP, s.into(), NONE, NONE, NONE, 0, 0, 0, 0);
    } else if (step instanceof CaptureStep.ThreadId s) {
      write(b, at, OP_TID, s.into(), NONE, NONE, NONE, 0, 0, 0, 0);
    } else if (step instanceof CaptureStep.Add s) {
      write(b, at, OP_ADD, s.into(), s.from(), NONE, NONE, 0, 0, 0, s.addend());
    } else if (step instanceof CaptureStep.Subtract s) {
      write(b, at, OP_SUB, s.into(), s.from(), s.minus(), NONE, 0, 0, 0, 0);
    } else if (step instanceof CaptureStep.Max s) {
      write(b, at, OP_MAX, s.into(), s.a(), s.b(), NONE, 0, 0, 0, 0);
    } else if (step instanceof CaptureStep.Min s) {
      write(b, at, OP_MIN, s.into(), s.a(), s.b(), NONE, 0, 0, 0, 0);
    } else if (step instanceof CaptureStep.And s) {
      write(b, at, OP_AND, s.into(), s.from(), NONE, NONE, 0, 0, 0, s.mask());
    } else if (step instanceof CaptureStep.Load s) {
      write(b, at, OP_LOAD, s.into(), s.address(), NONE, NONE, s.size(), 0, 0, s.offset());
    } else if (step instanceof CaptureStep.KeepIfInRange s) {
      write(b, at, OP_IN_RANGE_OR, s.into(), s.value(), s.low(), s.high(), 0, 0, 0, 0);
    } else if (step instanceof CaptureStep.Check s) {
      write(b, at, s.equal() ? OP_CHECK_EQ : OP_CHECK_NE, NONE, s.a(), s.b(), NONE, 0, 0, 0, 0);
    } else if (step instanceof CaptureStep.Copy s) {
      write(b, at, OP_COPY, NONE, s.address(), s.length() < 0 ? NONE : s.length(), NONE, 0,
          s.maxBytes(), 0, s.offset());
    } else if (step instanceof CaptureStep.ShiftLeft s) {
      write(b, at, OP_SHL, s.into(), s.from(), NONE, NONE, 0, 0, 0, s.bits());
    } else if (step instanceof CaptureStep.ShiftRight s) {
      write(b, at, OP_SHR, s.into(), s.from(), NONE, NONE, 0, 0, 0, s.bits());
    } else if (step instanceof CaptureStep.Multiply s) {
      write(b, at, OP_MUL, s.into(), s.from(), NONE, NONE, 0, 0, 0, s.factor());
    } else if (step instanceof CaptureStep.AddSlots s) {
      write(b, at, OP_ADD_SLOTS, s.into(), s.a(), s.b(), NONE, 0, 0, 0, 0);
    } else if (step instanceof CaptureStep.LoadIndexed s) {
      write(b, at, OP_LOAD_INDEXED, s.into(), s.base(), s.index(), NONE, s.size(), s.scale(), 0,
          s.offset());
    } else if (step instanceof CaptureStep.Chain s) {
      write(b, at, OP_CHAIN, s.into(), s.start(), NONE, NONE, s.maxHops(), s.copyBytes(),
          s.nextOffset(), s.copyOffset());
    } else {
      throw new IllegalArgumentException("unknown capture step " + step);
    }
  }

  private static void write(ByteBuffer b, int at, int op, int dst, int a, int bSlot, int c,
      int size, int max, int next, long imm) {
    b.put(at, (byte) op);
    b.put(at + 1, (byte) dst);
    b.put(at + 2, (byte) a);
    b.put(at + 3, (byte) bSlot);
    b.put(at + 4, (byte) c);
    b.put(at + 5, (byte) size);
    b.putShort(at + 6, (short) 0); // label: regions are named by their step index instead
    b.putInt(at + 8, max);
    b.putInt(at + 12, next);
    b.putLong(at + 16, imm);
  }
}
