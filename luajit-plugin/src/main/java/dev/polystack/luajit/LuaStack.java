package dev.polystack.luajit;

import java.util.ArrayList;
import java.util.List;

/**
 * The frames of one lua_State, walked from the top the way lj_debug_frame does, kept raw (function
 * object, frame type, PC pointer) and split into segments: each C or CP frame (a call from C into
 * the VM) ends a segment, and each segment belongs to one native interpreter frame.
 */
final class LuaStack {
  static final int MAX_FRAMES = 1024;

  static final int FRAME_C = 1;
  static final int FRAME_CONT = 2;
  static final int FRAME_VARG = 3;
  static final int FRAME_CP = 5;

  /**
   * One frame. {@code pc} points at the instruction after the one executing (0 when unknown),
   * or at the instruction itself when {@code pcExact} (a trace's position). A pc of 0 that is
   * exact is known to be unknown: a trace runs the frame, so the interpreter's saved PC is stale.
   * {@code proto} is the Lua function's prototype when the closure itself is unknown (a frame
   * a trace inlined, specialised to its prototype), else 0: the prototype is the closure's.
   */
  record Raw(long fn, int ffid, long pc, boolean pcExact, boolean boundary, long proto) {
    Raw(long fn, int ffid, long pc, boolean pcExact, boolean boundary) {
      this(fn, ffid, pc, pcExact, boundary, 0);
    }

    /** The prototype of this Lua frame's function. */
    long protoAddress(TargetReader r) throws WalkException {
      return proto != 0 ? proto : r.u64(fn + Layout.FN_PC, "function") - Layout.PROTO_SIZE;
    }
  }

  private final List<Raw> frames;
  private final List<Integer> segmentEnds;
  private final String error;

  private LuaStack(List<Raw> frames, List<Integer> segmentEnds, String error) {
    this.frames = frames;
    this.segmentEnds = segmentEnds;
    this.error = error;
  }

  List<Raw> frames() {
    return frames;
  }

  /** Why the walk stopped before the bottom of the stack, or null. */
  String error() {
    return error;
  }

  int segments() {
    return segmentEnds.size();
  }

  /** Indexes [from, to) of segment {@code k}. */
  int[] segment(int k) {
    int from = k == 0 ? 0 : segmentEnds.get(k - 1);
    return new int[] {from, segmentEnds.get(k)};
  }

  /** This stack under frames a JIT trace inlined above its base frame (innermost first). */
  LuaStack under(List<Raw> inlined) {
    if (inlined.isEmpty()) {
      return this;
    }
    List<Raw> all = new ArrayList<>(inlined);
    all.addAll(frames);
    List<Integer> ends = new ArrayList<>();
    for (int end : segmentEnds) {
      ends.add(end + inlined.size());
    }
    return new LuaStack(List.copyOf(all), List.copyOf(ends), error);
  }

  /**
   * Walks {@code L} from the frame below {@code base}.
   *
   * @param topPc PC of the top frame (see {@link Raw#pc()}), 0 if unknown
   */
  static LuaStack walk(TargetReader r, long L, long base, long topPc, boolean topExact) {
    List<Raw> out = new ArrayList<>();
    List<Integer> ends = new ArrayList<>();
    String error = null;
    try {
      long stack = r.u64(L + Layout.L_STACK, "lua_state");
      long size = r.u32(L + Layout.L_STACKSIZE, "lua_state") & 0xffffffffL;
      long stackEnd = stack + 8 * Math.min(size, 1 << 24);
      long frame = base - 8;
      long pc = topPc;
      boolean exact = topExact;
      for (int steps = 0; steps < MAX_FRAMES; steps++) {
        if (Long.compareUnsigned(frame, stack + 8) <= 0) {
          break; // stack[0] holds the thread, stack[1] the bottom frame's link
        }
        if (Long.compareUnsigned(frame, stackEnd) >= 0 || (frame & 7) != 0) {
          throw new WalkException("frame_outside_stack", "0x" + Long.toHexString(frame));
        }
        long ftsz = r.u64(frame, "frame");
        long fn = r.u64(frame - 8, "frame") & Layout.GCVMASK;
        int typep = (int) (ftsz & 7);
        long prev;
        if ((ftsz & 3) == 0) { // Lua frame: ftsz is the return PC into the caller
          int call = r.u32(ftsz - 4, "bytecode");
          prev = frame - 8L * (2 + Bytecode.a(call));
        } else {
          long delta = ftsz & ~7L;
          if (delta <= 0 || delta > stackEnd - stack) {
            throw new WalkException("bad_frame_link", "delta " + delta);
          }
          prev = frame - delta;
        }
        if (Long.compareUnsigned(prev, frame) >= 0) {
          throw new WalkException("frame_loop", "0x" + Long.toHexString(frame));
        }
        boolean boundary = typep == FRAME_C || typep == FRAME_CP;
        if (fn == L || typep == FRAME_VARG) {
          // A dummy frame (errors, cpcall) or a vararg pseudo-frame: no function of its own.
          if (boundary) {
            ends.add(out.size());
          }
        } else {
          r.expectGcType(fn, Layout.GCT_FUNC, "function");
          int ffid = r.u8(fn + Layout.FN_FFID, "function");
          out.add(new Raw(fn, ffid, pc, exact, boundary));
          if (boundary) {
            ends.add(out.size());
          }
        }
        exact = false;
        if ((ftsz & 3) == 0) {
          pc = ftsz;
        } else if (typep == FRAME_CONT) {
          pc = r.u64(frame - 16, "frame"); // frame_contpc: the continuation's saved PC
        } else if (typep != FRAME_VARG) {
          pc = 0; // the caller's PC lives in a C frame: taken from SAVE_PC later
        }
        frame = prev;
      }
    } catch (WalkException e) {
      error = e.reason();
    }
    if (ends.isEmpty() || ends.get(ends.size() - 1) != out.size()) {
      ends.add(out.size());
    }
    return new LuaStack(List.copyOf(out), List.copyOf(ends), error);
  }

  /**
   * The caller's base when the frame at {@code base} is already returning, else 0. A return
   * loads the link (the return PC into the caller) into PC before it moves BASE, and stores
   * result i at base-2+i on the way (BC_RET*, the fast functions' fff_res, lib_string.c's
   * string.byte loop): for a few instructions the function slot holds a result, or still the
   * returning Lua function while PC already points into its caller. Accepted only when
   * {@code pc} follows a call instruction and lies inside the bytecode of the Lua function
   * found where that call's A operand puts the caller's frame, so a stale base never passes.
   */
  static long returningFrame(TargetReader r, long base, long pc) {
    try {
      if (pc == 0 || (pc & 3) != 0) {
        return 0;
      }
      if (isFunction(r, base - 16)) {
        long fn = r.u64(base - 16, "frame") & Layout.GCVMASK;
        // A C or fast function's frame is reported as is; a Lua one only while PC is its own.
        if (r.u8(fn + Layout.FN_FFID, "function") != 0 || inBytecode(r, fn, pc)) {
          return 0;
        }
      }
      int call = r.u32(pc - 4, "bytecode");
      int op = call & 0xff;
      if (op != Bytecode.CALLM && op != Bytecode.CALL && op != Bytecode.ITERC
          && op != Bytecode.ITERN) {
        return 0;
      }
      long caller = base - 8L * (2 + Bytecode.a(call));
      if (!isFunction(r, caller - 16)) {
        return 0;
      }
      long fn = r.u64(caller - 16, "frame") & Layout.GCVMASK;
      return r.u8(fn + Layout.FN_FFID, "function") == 0 && inBytecode(r, fn, pc) ? caller : 0;
    } catch (WalkException e) {
      return 0;
    }
  }

  /** Whether {@code pc} is a PC of Lua function {@code fn}'s bytecode (or just past its end). */
  private static boolean inBytecode(TargetReader r, long fn, long pc) throws WalkException {
    long bc = r.u64(fn + Layout.FN_PC, "function");
    long sizeBc = r.u32(bc - Layout.PROTO_SIZE + Layout.PT_SIZEBC, "proto") & 0xffffffffL;
    return Long.compareUnsigned(pc, bc) > 0 && Long.compareUnsigned(pc, bc + 4 * sizeBc) <= 0;
  }

  /**
   * Whether the stack slot at {@code slot} holds a function object. The slot's type tag is checked
   * first: a slot holding a number or another object's reference (a returning frame's result) is
   * no function, and following it as one read a page of whatever it pointed to, which a walk from
   * a copy then lacked (a third of bench/lua/lost.lua's dropped walks).
   */
  static boolean isFunction(TargetReader r, long slot) {
    try {
      long value = r.u64(slot, "frame");
      if (value >>> 47 != Layout.TAG_FUNC) {
        return false;
      }
      r.expectGcType(value & Layout.GCVMASK, Layout.GCT_FUNC, "function");
      return true;
    } catch (WalkException e) {
      return false;
    }
  }
}
