package dev.polystack.luajit;

import dev.polystack.plugin.api.Bytes;
import java.util.ArrayList;
import java.util.List;

/**
 * A trace's IR (lj_ir.h), read once: its constants, and for a range of instructions the
 * functions whose code the recorder was in when it emitted them, as far as the IR says so. A
 * snapshot only exists where the recorder needed one, so a function the trace inlined without
 * a guard of its own (a small function with no branch, calling builtins) appears in none; its
 * code is still marked in the IR by the loads of its environment and upvalues (FLOAD func.env,
 * UREFO, UREFC of the closure constant), and the base frame's code by its stack-slot loads
 * (SLOAD). Opcode numbers are IRDEF's order, the same in every 2.1 build (upstream 2017-2026,
 * OpenResty 2023).
 */
final class TraceIr {
  static final int REF_BIAS = 0x8000;
  static final int IR_SIZE = 8;

  static final int IR_LOOP = 17;
  static final int IR_KGC = 24;
  static final int IR_KPTR = 25;
  static final int IR_KKPTR = 26;
  static final int IR_KNUM = 28;
  static final int IR_KINT64 = 29;
  static final int IR_UREFO = 60;
  static final int IR_UREFC = 61;
  static final int IR_FLOAD = 69;
  static final int IR_SLOAD = 71;
  static final int IRT_PROTO = 7;
  static final int IRT_FUNC = 8;
  static final int IRFL_FUNC_ENV = 1;
  /** An environment or upvalue load of a closure that is no constant of the trace. */
  static final long UNKNOWN_CLOSURE = -1;

  /**
   * Instructions the x64 backend may turn into a call to C (lj_asm.c, lj_asm_x86.h): all of
   * them, so that no call in a range is missed when deciding whose calls they are.
   */
  private static final boolean[] CALLS = new boolean[256];
  /**
   * Of those, the ones that always make exactly one call: the others may make none (a TOSTR or
   * SNEW fused into the BUFPUT that uses it, FPMATH inline with SSE4.1) or more.
   */
  private static final boolean[] ONE_CALL = new boolean[256];

  static {
    for (int op : new int[] {15 /* GCSTEP */, 45 /* MOD */, 46 /* POW */, 52 /* FPMATH */,
        79 /* SNEW */, 80 /* XSNEW */, 83 /* CNEW */, 84 /* CNEWI */, 93 /* TOSTR */}) {
      CALLS[op] = true;
    }
    for (int op : new int[] {59 /* NEWREF */, 81 /* TNEW */, 82 /* TDUP */, 86 /* BUFPUT */,
        87 /* BUFSTR */, 94 /* STRTO */, 95 /* CALLN */, 96 /* CALLA */, 97 /* CALLL */,
        98 /* CALLS */, 99 /* CALLXS */}) {
      CALLS[op] = true;
      ONE_CALL[op] = true;
    }
  }

  /**
   * How many calls instructions [from, to) make, when each of them that may call makes exactly
   * one; -1 when one of them may make none or several.
   */
  int exactCalls(int from, int to) {
    int n = 0;
    for (int ref = Math.max(from, REF_BIAS); ref < to && inRange(ref); ref++) {
      int op = op(ref);
      if (CALLS[op]) {
        if (!ONE_CALL[op]) {
          return -1;
        }
        n++;
      }
    }
    return n;
  }

  private final byte[] ir;
  private final long nk;
  private final long nins;
  /** IR reference of the LOOP instruction, or 0 when the trace does not loop. */
  private final int loop;

  private TraceIr(byte[] ir, long nk, long nins) {
    this.ir = ir;
    this.nk = nk;
    this.nins = nins;
    int found = 0;
    for (long ref = REF_BIAS; ref < nins && found == 0; ref++) {
      if (op((int) ref) == IR_LOOP) {
        found = (int) ref;
      }
    }
    this.loop = found;
  }

  /** Reads constants and instructions [nk, nins) of the IR at {@code irBase} (biased). */
  static TraceIr read(TargetReader r, long irBase, long nk, long nins) throws WalkException {
    if (nk <= 0 || nk > REF_BIAS || nins < REF_BIAS || nins > 2L * REF_BIAS
        || IR_SIZE * (nins - nk) > dev.polystack.plugin.api.RemoteMemory.MAX_READ) {
      throw new WalkException("trace_bad_ir", "nk " + nk + " nins " + nins);
    }
    byte[] ir = r.bytes(irBase + IR_SIZE * nk, (int) (IR_SIZE * (nins - nk)), "trace_ir");
    return new TraceIr(ir, nk, nins);
  }

  long nins() {
    return nins;
  }

  int loop() {
    return loop;
  }

  int op(int ref) {
    return ir[at(ref) + 5] & 0xff;
  }

  private int type(int ref) {
    return ir[at(ref) + 4] & 0x1f;
  }

  private int op1(int ref) {
    return Bytes.getUnsignedShort(ir, at(ref));
  }

  private int op2(int ref) {
    return Bytes.getUnsignedShort(ir, at(ref) + 2);
  }

  private int at(int ref) {
    return (int) (IR_SIZE * (ref - nk));
  }

  private boolean inRange(long ref) {
    return ref >= nk && ref < nins;
  }

  /** The 64-bit value of constant {@code ref} (KGC, KNUM, ...), which sits in the next slot. */
  long constant(int ref) throws WalkException {
    if (ref < nk || ref >= REF_BIAS - 1) {
      throw new WalkException("trace_constant_out_of_range", "ref " + ref);
    }
    return Bytes.getLong(ir, at(ref + 1));
  }

  /** KGC constants of the given IR type (IRT_PROTO, IRT_FUNC): GC object addresses. */
  long[] gcConstants(int irType) {
    List<Long> out = new ArrayList<>();
    for (int ref = (int) nk; ref < REF_BIAS; ref++) {
      int op = op(ref);
      boolean wide = op == IR_KGC || op == IR_KPTR || op == IR_KKPTR || op == IR_KNUM
          || op == IR_KINT64;
      if (wide && ref + 1 < REF_BIAS) {
        if (op == IR_KGC && type(ref) == irType) {
          out.add(Bytes.getLong(ir, at(ref + 1)) & Layout.GCVMASK);
        }
        ref++;
      }
    }
    return out.stream().mapToLong(Long::longValue).toArray();
  }

  /**
   * What instructions [from, to) say about whose code they are: the closures (constants) whose
   * environment or upvalues they load, in order of first appearance, and where calls and base
   * frame loads are.
   */
  Evidence evidence(int from, int to) {
    List<Long> closures = new ArrayList<>();
    List<Integer> closureRefs = new ArrayList<>();
    List<Integer> baseRefs = new ArrayList<>();
    List<Integer> callRefs = new ArrayList<>();
    for (int ref = Math.max(from, REF_BIAS); ref < to && inRange(ref); ref++) {
      int op = op(ref);
      long closure = 0;
      boolean base = op == IR_SLOAD;
      if ((op == IR_FLOAD && op2(ref) == IRFL_FUNC_ENV) || op == IR_UREFO || op == IR_UREFC) {
        int fn = op1(ref);
        if (fn >= nk && fn < REF_BIAS && op(fn) == IR_KGC && type(fn) == IRT_FUNC) {
          closure = Bytes.getLong(ir, at(fn + 1)) & Layout.GCVMASK;
        } else if (inRange(fn) && fn >= REF_BIAS && op(fn) == IR_SLOAD && op1(fn) == 0) {
          base = true; // the base frame's own closure, loaded from its slot
        } else {
          closure = UNKNOWN_CLOSURE; // a closure the trace specialised to its prototype
        }
      }
      if (closure != 0) {
        closures.add(closure);
        closureRefs.add(ref);
      } else if (base) {
        baseRefs.add(ref);
      } else if (CALLS[op]) {
        callRefs.add(ref);
      }
    }
    return new Evidence(closures, closureRefs, baseRefs, callRefs);
  }

  /**
   * @param closures closure constants whose code the range runs (env or upvalue loads), with
   *     {@code closureRefs} where each was seen
   * @param baseRefs where the range loads the base frame's stack slots
   * @param callRefs where the range calls C
   */
  record Evidence(List<Long> closures, List<Integer> closureRefs, List<Integer> baseRefs,
      List<Integer> callRefs) {}
}
