package dev.polystack.luajit;

import dev.polystack.luajit.TraceSnapshots.Position;
import dev.polystack.luajit.TraceSnapshots.Table;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The function a snapshot's range of a trace runs without a snapshot of its own (a small
 * function with no branch or guard, inlined), found from the trace's IR (TraceIr): which
 * closures the range's code loads from, where the shown frames' code runs, and which of the
 * range's calls into C are whose (docs/luajit.md, "Frames a trace inlined").
 */
final class UnsnapshottedCallee {
  /** How far the caller's bytecode is searched for the call of a function the trace inlined. */
  static final int MAX_CALL_SCAN = 512;
  /** Reads of closures the trace holds as constants (see TraceSnapshots). */
  private static final String FUNCTION = TraceSnapshots.CONSTANT_FUNCTION;

  private UnsnapshottedCallee() {}

  /**
   * What a snapshot's range runs: the frames its snapshot shows; whether it also runs code of a
   * function the trace inlined without a snapshot of its own ({@code foreign}); if that can be
   * placed, the frames with it on top ({@code callee}), and how many of the range's calls the
   * shown frames make before the callee's code starts and after it ends (-1: unknown).
   */
  record Resolution(Position shown, boolean foreign, Position callee, int before, int after,
      Position marked) {
    Resolution(Position shown, boolean foreign, Position callee, int before, int after) {
      this(shown, foreign, callee, before, after,
          shown.unresolvedBecause(TraceSnapshots.BETWEEN_SNAPSHOTS));
    }
  }

  /**
   * Finds the function a snapshot's range runs without a snapshot of its own. The IR between
   * this snapshot and the next (for a loop body: between the pre-roll snapshots it was copied
   * from) names the closures whose code it runs (TraceIr); one that is not among the snapshot's
   * frames was inlined there. When it is the only one, its code starts at its first load and
   * ends where the shown frames' code shows again; calls before and after are the shown
   * frames'. Its caller's bytecode has to make exactly one call in the range, the one that
   * frame is called by.
   */
  static Resolution resolve(TargetReader r, Table t, TraceIr ir, int snapshot, Position p,
      long baseProto) throws WalkException {
    int[] range = irRange(r, t, ir, snapshot);
    if (range == null) {
      return new Resolution(p, true, null, -1, -1);
    }
    TraceIr.Evidence ev = ir.evidence(range[0], range[1]);
    // The base frame's function: slot 0 of the snapshot when the trace specialised to it (a
    // constant, which a walk from a running target cannot get wrong), else the Lua stack's.
    Integer slot0 = TraceSnapshots.map(r, t, snapshot).entryBySlot().get(0);
    if (slot0 != null && (slot0 & 0xffff) < TraceIr.REF_BIAS) {
      long fn = TraceSnapshots.constant(ir, slot0, "function") & Layout.GCVMASK;
      r.expectGcType(fn, Layout.GCT_FUNC, FUNCTION);
      if (r.u8(fn + Layout.FN_FFID, FUNCTION) == 0) {
        baseProto = r.u64(fn + Layout.FN_PC, FUNCTION) - Layout.PROTO_SIZE;
      }
    }
    Set<Long> shown = new HashSet<>();
    shown.add(baseProto);
    for (LuaStack.Raw f : p.inlined()) {
      shown.add(f.protoAddress(r));
    }
    long other = 0;
    int first = -1;
    int end = range[1];
    for (int i = 0; i < ev.closures().size(); i++) {
      long closure = ev.closures().get(i);
      int ref = ev.closureRefs().get(i);
      boolean isShown = closure != TraceIr.UNKNOWN_CLOSURE
          && shown.contains(r.u64(closure + Layout.FN_PC, FUNCTION)
              - Layout.PROTO_SIZE);
      if (isShown) {
        if (first >= 0 && ref < end) {
          end = ref;
        }
      } else if (other == 0) {
        other = closure;
        first = ref;
      } else if (other != closure) {
        return new Resolution(p, true, null, -1, -1); // two functions: whose is each call?
      }
    }
    if (other == 0) {
      return new Resolution(p, false, null, 0, 0);
    }
    if (other == TraceIr.UNKNOWN_CLOSURE || p.basePc() == 0) {
      return new Resolution(p, true, null, -1, -1);
    }
    for (int ref : ev.baseRefs()) {
      if (ref > first && ref < end) {
        end = ref;
      }
    }
    r.expectGcType(other, Layout.GCT_FUNC, FUNCTION);
    if (r.u8(other + Layout.FN_FFID, FUNCTION) != 0) {
      return new Resolution(p, true, null, -1, -1);
    }
    // The innermost shown frame is executing at its snapshot PC: its one call from there on is
    // the call of the unsnapshotted function.
    boolean innermostIsBase = p.inlined().isEmpty();
    long callerPc = innermostIsBase ? p.basePc() : p.inlined().get(0).pc();
    long callerProto = innermostIsBase ? baseProto : p.inlined().get(0).protoAddress(r);
    // The next snapshot bounds the search when it is in the caller's frame too (exact PC) or
    // already inside the callee (the caller's PC there is the return PC of the call).
    long until = 0;
    if (snapshot + 1 < t.ref().length) {
      Position next = TraceSnapshots.position(r, t, ir, snapshot + 1);
      int callerDepth = p.inlined().size();
      int nextDepth = next.inlined().size();
      if (next.unresolved() == null && nextDepth >= callerDepth) {
        long pcThere = callerDepth == 0 ? next.basePc()
            : next.inlined().get(nextDepth - callerDepth).pc();
        long protoThere = callerDepth == 0 ? baseProto
            : next.inlined().get(nextDepth - callerDepth).protoAddress(r);
        until = protoThere == callerProto && pcThere > callerPc ? pcThere : 0;
      }
    }
    long callAt = onlyCallFrom(r, callerProto, callerPc, until);
    if (callAt == 0) {
      return new Resolution(p, true, null, -1, -1);
    }
    List<LuaStack.Raw> frames = new ArrayList<>();
    frames.add(new LuaStack.Raw(other, 0, 0, true, false,
        r.u64(other + Layout.FN_PC, FUNCTION) - Layout.PROTO_SIZE));
    Position callee;
    if (innermostIsBase) {
      callee = new Position(frames, callAt + 4, false, null);
    } else {
      LuaStack.Raw caller = p.inlined().get(0);
      frames.add(new LuaStack.Raw(caller.fn(), caller.ffid(), callAt + 4, false, false,
          caller.proto()));
      frames.addAll(p.inlined().subList(1, p.inlined().size()));
      callee = new Position(frames, p.basePc(), p.basePcExact(), null);
    }
    return new Resolution(p, true, callee, ir.exactCalls(range[0], first),
        ir.exactCalls(end, range[1]));
  }

  /**
   * IR references [from, to) of the code a snapshot's range runs: up to the next snapshot. A
   * range of the loop body has no closure loads of its own when they were loop-invariant, so it
   * is read in the pre-roll: between the snapshots its own and the next were copied from
   * (lj_opt_loop.c copies them in order, with the same PC; the loop snapshot has snapshot 0's).
   * Null when that correspondence is not found.
   */
  private static int[] irRange(TargetReader r, Table t, TraceIr ir, int snapshot)
      throws WalkException {
    int n = t.ref().length;
    int to = snapshot + 1 < n ? t.ref()[snapshot + 1] : (int) ir.nins();
    int loop = ir.loop();
    if (loop == 0 || t.ref()[snapshot] < loop) {
      return new int[] {t.ref()[snapshot], loop != 0 && to > loop ? loop : to};
    }
    // Loop body: the loop snapshot (ref at LOOP) is the first; copies follow.
    int loopSnapshot = -1;
    for (int i = 0; i < n; i++) {
      if (t.ref()[i] >= loop) {
        loopSnapshot = i;
        break;
      }
    }
    if (loopSnapshot < 1) {
      return null;
    }
    int origin = 0;
    int next = -1;
    for (int i = loopSnapshot + 1; i <= snapshot + 1 && i < n; i++) {
      long pc = TraceSnapshots.map(r, t, i).pcbase();
      int found = -1;
      for (int j = origin + 1; j < loopSnapshot; j++) {
        if (TraceSnapshots.map(r, t, j).pcbase() == pc) {
          found = j;
          break;
        }
      }
      if (found < 0) {
        return null;
      }
      if (i <= snapshot) {
        origin = found;
      } else {
        next = found;
      }
    }
    int from = t.ref()[origin];
    int until = next >= 0 ? t.ref()[next] : loop;
    return from <= until ? new int[] {from, until} : null;
  }

  /**
   * The address of the one call instruction (CALL, CALLM, ITERC, ITERN) that {@code proto}'s
   * bytecode makes from {@code pc} on before {@code until} (0: none), it loops back or
   * returns, or 0 when it makes none, several, or a tail call.
   */
  private static long onlyCallFrom(TargetReader r, long proto, long pc, long until)
      throws WalkException {
    if (proto == 0) {
      return 0;
    }
    long bc = proto + Layout.PROTO_SIZE;
    long sizeBc = r.u32(proto + Layout.PT_SIZEBC, "proto") & 0xffffffffL;
    long pos = (pc - bc) / 4;
    if (pc < bc || pos >= sizeBc) {
      return 0;
    }
    long found = 0;
    long stop = until > pc ? Math.min(sizeBc, (until - bc + 3) / 4) : sizeBc;
    for (long i = pos; i < stop && i < pos + MAX_CALL_SCAN; i++) {
      int ins = r.u32(bc + 4 * i, "bytecode");
      int op = Bytecode.op(ins);
      if (op == Bytecode.CALL || op == Bytecode.CALLM || op == Bytecode.ITERC
          || op == Bytecode.ITERN) {
        if (found != 0) {
          return 0;
        }
        found = bc + 4 * i;
      } else if (op == Bytecode.CALLMT || op == Bytecode.CALLT) {
        return 0;
      } else if (Bytecode.endsStraightLine(op, ins)) {
        break;
      }
    }
    return found;
  }
}
