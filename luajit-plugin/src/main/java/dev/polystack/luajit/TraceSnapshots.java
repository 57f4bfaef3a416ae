package dev.polystack.luajit;

import dev.polystack.plugin.api.Bytes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;

/**
 * Where a JIT trace is in Lua terms at one machine-code address, read from its snapshots
 * (lj_snap.c): the snapshot in force at an address is the last one whose mcode offset
 * (SnapShot.mcofs, LuaJIT 2021-03 on) is at or below it, the way lj_trace_unwind finds the exit
 * for an on-trace error. Its map ends with the bytecode PC the interpreter would resume at and
 * how many slots above the trace's base frame the innermost frame lies; frames a trace inlined
 * exist only there, as constants for their functions and frame links. A function the trace
 * inlined without a snapshot of its own is found from the IR (TraceIr) when the sample is in C
 * code the trace called; else the sample says so (docs/luajit.md, "Frames a trace inlined").
 */
final class TraceSnapshots {
  /** Why a trace's snapshots cannot be used: a layout without mcofs, or not snapshots at all. */
  static final String UNSUPPORTED = "trace_snapshots_unsupported";
  /** The trace object no longer describes the code it was read for (freed, flushed, reused). */
  static final String CHANGED = "trace_changed";
  /** A sample in code of a function the trace inlined but its snapshot does not show. */
  static final String BETWEEN_SNAPSHOTS = "trace_inlined_between_snapshots";
  /**
   * What reads of a closure the trace holds as a constant are: it lives as long as the trace
   * and its prototype never changes, so it may be read live after the tick (TargetReader).
   */
  static final String CONSTANT_FUNCTION = "trace_function";
  /** How far past a trace's end a snapshot's mcode offset may lie (the trimmed tail). */
  static final int MAX_TAIL_TRIM = 256;
  /** -Omaxsnap defaults to 500; a count far beyond it is not a snapshot array. */
  static final int MAX_SNAPSHOTS = 4096;

  // SnapShot (lj_jit.h), 12 bytes since mcofs was added.
  static final int SNAP_SIZE = 12;
  static final int SNAP_MAPOFS = 0;
  static final int SNAP_REF = 4;
  static final int SNAP_MCOFS = 6;
  static final int SNAP_NENT = 10;
  // SnapEntry: slot in the top byte, flags, IR reference in the low 16 bits.
  static final int SNAP_FRAME = 0x010000;

  // Frame link types (lj_frame.h): a Lua frame's link is its return PC (low two bits 0).
  static final int FRAME_CONT = 2;
  static final int FRAME_VARG = 3;
  static final int FRAME_PCALL = 6;
  static final int FRAME_PCALLH = 7;

  /** Traces whose snapshot tables are kept; a VM rarely has more live than this. */
  static final int MAX_TRACES = 1024;
  /**
   * Largest trace whose machine code is scanned for calls: all mcode areas together are at most
   * -Omaxmcode (512 KiB by default), so a longer trace is a rare setting or a corrupt size; it is
   * placed by its snapshots alone.
   */
  static final int MAX_SCANNED_MCODE = 512 << 10;
  static final int MAX_POSITIONS = 8192;

  /**
   * Per trace: where its snapshot map and IR are, and each snapshot's map offset, entry count,
   * mcode offset and first IR reference, validated once. Read only when a sample lands on the
   * trace, so a trace nobody samples costs nothing.
   */
  record Table(long snap, long snapmap, long ir, long nk, long nins, long[] mapofs,
      int[] nent, int[] mcofs, int[] ref) {}

  private static final Table REJECTED = new Table(0, 0, 0, 0, 0, new long[0], new int[0],
      new int[0], new int[0]);

  /** Written out, as {@link Traces.Trace} is: hashed on every sample on a trace. */
  private record PositionKey(Traces.Trace trace, int snapshot, long baseProto) {
    @Override
    public boolean equals(Object o) {
      return o instanceof PositionKey k && k.snapshot == snapshot && k.baseProto == baseProto
          && k.trace.equals(trace);
    }

    @Override
    public int hashCode() {
      return (trace.hashCode() * 31 + snapshot) * 31 + Long.hashCode(baseProto);
    }
  }

  /** A trace's machine code and its calls, read when a sample first returns into its loop. */
  private record Calls(byte[] code, TraceCalls calls) {}

  /**
   * A trace's snapshots, IR and machine code never change while it lives, and these caches live
   * no longer than the trace list they were read for, so a sample on a known trace reads only
   * the trace's header, to check it still is that trace.
   */
  private final Map<Traces.Trace, Table> tables = new BoundedCache<>(MAX_TRACES);
  private final Map<Traces.Trace, TraceIr> irs = new BoundedCache<>(MAX_TRACES);
  private final Map<PositionKey, UnsnapshottedCallee.Resolution> resolutions =
      new BoundedCache<>(MAX_POSITIONS);
  /** Machine code of looping traces samples returned into; up to 1 MiB each. */
  private final Map<Traces.Trace, Calls> callsByTrace = new BoundedCache<>(64);

  /**
   * Lua frames a trace executes at one point: those it inlined above its base frame (innermost
   * first), and the base frame's own PC.
   *
   * @param basePcExact whether {@code basePc} is the executing instruction (no inlined frame
   *     above) or a return PC into the base frame
   * @param unresolved why frames the trace inlined are missing, or null. Either the frame links
   *     could not be followed (no inlined frame is shown, and the base frame's PC is the call
   *     that leads to them if known, else 0) or the sample is in code of a function no
   *     snapshot shows (the frames of the snapshot in force are shown)
   */
  record Position(List<LuaStack.Raw> inlined, long basePc, boolean basePcExact,
      String unresolved) {
    Position {
      inlined = List.copyOf(inlined);
    }

    Position unresolvedBecause(String why) {
      return new Position(inlined, basePc, basePcExact, why);
    }
  }

  /**
   * @param machinePc an address inside the trace's machine code
   * @param returnAddress whether {@code machinePc} is a return address (a trace's call into C),
   *     which belongs to the call before it
   * @param baseProto the prototype of the trace's base frame, 0 if unknown
   * @param isCode whether an address is executable code of the process (a call's target)
   */
  Position locate(TargetReader r, Traces.Trace t, long machinePc, boolean returnAddress,
      long baseProto, LongPredicate isCode) throws WalkException {
    long ofs = machinePc - t.mcode() - (returnAddress ? 1 : 0);
    if (ofs < 0 || ofs >= t.size()) {
      throw new WalkException("trace_pc_outside", "offset " + ofs);
    }
    byte[] header = r.bytes(t.address(), Layout.T_HEADER_SIZE, "trace");
    Table table = tables.get(t);
    if (table == null) {
      try {
        table = table(r, t, header);
      } catch (WalkException e) {
        if (e.reason().equals(UNSUPPORTED)) {
          tables.put(t, REJECTED); // not a layout this reads: no need to read it again
        }
        throw e;
      }
      tables.put(t, table);
    }
    if (table == REJECTED) {
      throw new WalkException(UNSUPPORTED, "trace " + t.number());
    }
    checkUnchanged(t, table, header);
    Calls calls = calls(r, t, Bytes.getInt(header, Layout.T_MCLOOP), isCode);
    int snapshot = snapshotAt(table, ofs);
    // Calls, and the code between two of them, are placed among the calls of their snapshot's
    // range; those of a loop body where their twins in the pre-roll are (TraceCalls): there the
    // frames the recorder saw have their snapshots.
    int[] around = null;
    boolean inLoop = calls != null && calls.calls().inLoop((int) ofs);
    if (calls != null && returnAddress) {
      int ret = inLoop ? calls.calls().twin((int) ofs + 1) : (int) ofs + 1;
      around = ret > 0 ? new int[] {ret} : null;
    } else if (calls != null) {
      around = inLoop
          ? calls.calls().twinsAround((int) ofs, table.mcofs()[snapshot], end(table, t, snapshot))
          : calls.calls().callsAround((int) ofs, table.mcofs()[snapshot],
              end(table, t, snapshot));
    }
    if (around != null) {
      int at = snapshotAt(table, around[0] - 1);
      if (around.length == 1 || snapshotAt(table, around[1] - 1) == at) {
        snapshot = at;
      } else {
        around = null; // the code between lies across a snapshot of the pre-roll
      }
    }
    PositionKey key = new PositionKey(t, snapshot, baseProto);
    UnsnapshottedCallee.Resolution res = resolutions.get(key);
    if (res == null) {
      TraceIr ir = irs.get(t);
      if (ir == null) {
        ir = TraceIr.read(r, table.ir(), table.nk(), table.nins());
        irs.put(t, ir);
      }
      Position shown = position(r, table, ir, snapshot);
      res = shown.unresolved() != null
          ? new UnsnapshottedCallee.Resolution(shown, false, null, 0, 0, shown)
          : UnsnapshottedCallee.resolve(r, table, ir, snapshot, shown, baseProto);
      resolutions.put(key, res);
    }
    if (!res.foreign()) {
      return res.shown();
    }
    if (res.callee() == null || around == null || res.before() < 0 || res.after() < 0) {
      return res.marked(); // code of the snapshot's frames or of the unsnapshotted one
    }
    // The range's calls in order: the shown frames' first, then the callee's, then theirs.
    boolean allCallee = true;
    boolean allShown = true;
    for (int ret : around) {
      int[] index = calls.calls().index(ret, table.mcofs()[snapshot], end(table, t, snapshot));
      boolean counted = index[0] >= 0 && index[1] > res.before() + res.after();
      boolean callee = counted && index[0] >= res.before()
          && index[0] < index[1] - res.after();
      allCallee &= callee;
      allShown &= counted && !callee && returnAddress;
    }
    return allCallee ? res.callee() : allShown ? res.shown() : res.marked();
  }

  /** Where snapshot {@code s}'s machine code ends (the next one's offset, or the trace's end). */
  private static int end(Table table, Traces.Trace t, int s) {
    return s + 1 < table.mcofs().length ? table.mcofs()[s + 1] : (int) t.size();
  }

  /** The snapshot in force at machine-code offset {@code ofs}. */
  private static int snapshotAt(Table table, long ofs) {
    int found = 0;
    for (int i = 0; i < table.mcofs.length && table.mcofs[i] <= ofs; i++) {
      found = i;
    }
    return found;
  }

  /** The calls of a trace's machine code (TraceCalls), or null if it is too large. */
  private Calls calls(TargetReader r, Traces.Trace t, int mcloop, LongPredicate isCode)
      throws WalkException {
    if (t.size() > MAX_SCANNED_MCODE) {
      return null;
    }
    Calls calls = callsByTrace.get(t);
    if (calls == null) {
      byte[] code;
      try {
        code = r.bytes(t.mcode(), (int) t.size(), "trace_mcode");
      } catch (WalkException e) {
        return null; // placed by its snapshots alone, as if it made no calls
      }
      calls = new Calls(code, TraceCalls.of(code, t.mcode(),
          mcloop > 0 && mcloop < t.size() ? mcloop : 0, isCode));
      callsByTrace.put(t, calls);
    }
    return calls;
  }

  /**
   * The trace object is read live (it never changes while the trace lives); one freed and its
   * memory reused, or a trace flushed and its number and mcode given to another, would place
   * samples by another trace's snapshots, so each use checks the header still matches.
   */
  private static void checkUnchanged(Traces.Trace t, Table table, byte[] h)
      throws WalkException {
    if ((h[Layout.GC_GCT] & 0xff) != Layout.GCT_TRACE
        || Bytes.getUnsignedShort(h, Layout.T_TRACENO) != t.number()
        || Bytes.getLong(h, Layout.T_MCODE) != t.mcode()
        || (Bytes.getInt(h, Layout.T_SZMCODE) & 0xffffffffL) != t.size()
        || Bytes.getLong(h, Layout.T_SNAP) != table.snap()
        || Bytes.getLong(h, Layout.T_IR) != table.ir()) {
      throw new WalkException(CHANGED, "trace " + t.number());
    }
  }

  private static Table table(TargetReader r, Traces.Trace t, byte[] header)
      throws WalkException {
    int nsnap = Bytes.getUnsignedShort(header, Layout.T_NSNAP);
    long nsnapmap = Bytes.getInt(header, Layout.T_NSNAPMAP) & 0xffffffffL;
    if (nsnap <= 0 || nsnap > MAX_SNAPSHOTS) {
      throw new WalkException(UNSUPPORTED, "nsnap " + nsnap);
    }
    long snapshots = Bytes.getLong(header, Layout.T_SNAP);
    byte[] snaps = r.bytes(snapshots, SNAP_SIZE * nsnap, "trace_snapshot");
    long[] mapofs = new long[nsnap];
    int[] nent = new int[nsnap];
    int[] mcofs = new int[nsnap];
    int[] ref = new int[nsnap];
    for (int i = 0; i < nsnap; i++) {
      mapofs[i] = Bytes.getInt(snaps, SNAP_SIZE * i + SNAP_MAPOFS) & 0xffffffffL;
      ref[i] = Bytes.getUnsignedShort(snaps, SNAP_SIZE * i + SNAP_REF);
      mcofs[i] = Bytes.getUnsignedShort(snaps, SNAP_SIZE * i + SNAP_MCOFS);
      nent[i] = snaps[SNAP_SIZE * i + SNAP_NENT] & 0xff;
      // Builds before mcofs existed keep nslots and topslot there: snapshot 0 then never reads
      // as offset 0, and offsets must grow with the snapshot number as the assembler lays out.
      // Offsets count from the code's top before the tail was trimmed (asm_snap_fixup_mcofs),
      // so a last snapshot can lie a few bytes past the end: it is then in force nowhere.
      if ((i == 0 && mcofs[i] != 0) || (i > 0 && (mcofs[i] < mcofs[i - 1]
          || mapofs[i] < mapofs[i - 1] || ref[i] < ref[i - 1]))
          || mcofs[i] > t.size() + MAX_TAIL_TRIM || mapofs[i] + nent[i] + 2 > nsnapmap) {
        throw new WalkException(UNSUPPORTED, "snapshot " + i + " of trace "
            + t.number());
      }
    }
    long nk = Bytes.getInt(header, Layout.T_NK) & 0xffffffffL;
    long nins = Bytes.getInt(header, Layout.T_NINS) & 0xffffffffL;
    return new Table(snapshots, Bytes.getLong(header, Layout.T_SNAPMAP),
        Bytes.getLong(header, Layout.T_IR), nk, nins, mapofs, nent, mcofs, ref);
  }

  /** A snapshot's map: its entries by slot, its PC and depth (the last 64-bit word). */
  record SnapMap(Map<Integer, Integer> entryBySlot, long pcbase) {
    long pc() {
      return pcbase >>> 8;
    }

    int depth() {
      return (int) (pcbase & 0xff);
    }
  }

  static SnapMap map(TargetReader r, Table t, int snapshot) throws WalkException {
    int nent = t.nent()[snapshot];
    byte[] map = r.bytes(t.snapmap() + 4 * t.mapofs()[snapshot], 4 * (nent + 2),
        "trace_snapshot");
    Map<Integer, Integer> entryBySlot = new HashMap<>();
    for (int e = 0; e < nent; e++) {
      int sn = Bytes.getInt(map, 4 * e);
      entryBySlot.put(sn >>> 24, sn);
    }
    return new SnapMap(entryBySlot, Bytes.getLong(map, 4 * nent));
  }

  static Position position(TargetReader r, Table t, TraceIr ir, int snapshot)
      throws WalkException {
    SnapMap map = map(r, t, snapshot);
    if (map.depth() == 0) {
      return new Position(List.of(), map.pc(), true, null);
    }
    List<Slot> chain;
    try {
      chain = chain(r, ir, map.entryBySlot(), map.pc(), map.depth());
    } catch (WalkException e) {
      if (!e.reason().startsWith("trace_")) {
        throw e;
      }
      return new Position(List.of(), 0, true, e.reason());
    }
    Slot base = chain.get(chain.size() - 1);
    List<LuaStack.Raw> inlined = new ArrayList<>();
    try {
      for (Slot s : chain.subList(0, chain.size() - 1)) {
        inlined.add(function(r, ir, map.entryBySlot().get(s.fnSlot()), s));
      }
    } catch (WalkException e) {
      if (!e.reason().startsWith("trace_")) {
        throw e;
      }
      return new Position(List.of(), base.pc(), base.exact(), e.reason());
    }
    return new Position(inlined, base.pc(), base.exact(), null);
  }

  /** One frame of a snapshot: where its function sits (slots above the base frame's) and PC. */
  private record Slot(int fnSlot, long pc, boolean exact) {}

  /**
   * The frames from the innermost down to the trace's base frame, from the frame links alone
   * (LJ_FR2: a frame is its function, then its link, then its base; the link slot carries the
   * frame flag). A Lua link is the return PC into the caller, whose CALL's A operand says how
   * far below the caller's own function is; a continuation (a metamethod the trace inlined)
   * keeps the caller's PC in the slot below its function; vararg and pcall links hold the
   * distance to the frame below, as on the Lua stack (lj_frame.h).
   */
  private static List<Slot> chain(TargetReader r, TraceIr ir,
      Map<Integer, Integer> entryBySlot, long pc, int depth) throws WalkException {
    List<Slot> out = new ArrayList<>();
    int fnSlot = depth;
    long framePc = pc;
    boolean exact = true;
    for (int steps = 0; fnSlot > 0; steps++) {
      if (steps > depth) {
        throw new WalkException("trace_frames_inconsistent", "more frames than slots");
      }
      Integer linkEntry = entryBySlot.get(fnSlot + 1);
      if (linkEntry == null || (linkEntry & SNAP_FRAME) == 0) {
        throw new WalkException("trace_frame_link_not_in_snapshot", "slot " + (fnSlot + 1));
      }
      long link = constant(ir, linkEntry, "frame_link");
      int type = (int) (link & 7);
      int callerFnSlot;
      long callerPc;
      if ((link & 3) == 0) {
        int call = r.u32(link - 4, "bytecode");
        callerFnSlot = fnSlot - Bytecode.a(call) - 2;
        callerPc = link;
      } else if (type == FRAME_CONT || type == FRAME_VARG || type == FRAME_PCALL
          || type == FRAME_PCALLH) {
        long delta = link & ~7L;
        if (delta <= 0 || delta / 8 > fnSlot) {
          throw new WalkException("trace_frames_inconsistent", "link delta " + delta);
        }
        callerFnSlot = fnSlot - (int) (delta / 8);
        if (type == FRAME_VARG) {
          // The function's frame moved above its varargs: the same function below holds the
          // link to its caller, and this PC.
          fnSlot = callerFnSlot;
          continue;
        }
        callerPc = type == FRAME_CONT
            ? constant(ir, entryBySlot.get(fnSlot - 1), "continuation_pc")
            : 0; // pcall's own frame, a builtin's: no PC
      } else {
        throw new WalkException("trace_inlined_not_lua", "frame link type " + type);
      }
      if (callerFnSlot < 0) {
        throw new WalkException("trace_frames_inconsistent", "caller slot " + callerFnSlot);
      }
      out.add(new Slot(fnSlot, framePc, exact));
      fnSlot = callerFnSlot;
      framePc = callerPc;
      exact = false;
    }
    out.add(new Slot(0, framePc, exact));
    return out;
  }

  /**
   * The function of an inlined frame: a constant of the trace when the recorder specialised the
   * call to the closure; else, for a Lua frame, the prototype the trace specialised it to,
   * found among the trace's prototype constants as the one whose bytecode holds the frame's PC.
   */
  private static LuaStack.Raw function(TargetReader r, TraceIr ir, Integer entry, Slot s)
      throws WalkException {
    if (entry == null) {
      throw new WalkException("trace_function_not_in_snapshot", "slot " + s.fnSlot());
    }
    int ref = entry & 0xffff;
    if (ref < TraceIr.REF_BIAS) {
      long fn = constant(ir, entry, "function") & Layout.GCVMASK;
      r.expectGcType(fn, Layout.GCT_FUNC, CONSTANT_FUNCTION);
      int ffid = r.u8(fn + Layout.FN_FFID, CONSTANT_FUNCTION);
      return new LuaStack.Raw(fn, ffid, s.pc(), s.exact(), false, ffid != 0 ? 0
          : r.u64(fn + Layout.FN_PC, CONSTANT_FUNCTION) - Layout.PROTO_SIZE);
    }
    long proto = s.pc() == 0 ? 0 : protoHolding(r, ir, s.pc());
    if (proto == 0) {
      throw new WalkException("trace_function_not_constant", "ref " + ref);
    }
    return new LuaStack.Raw(0, 0, s.pc(), s.exact(), false, proto);
  }

  /** The prototype constant of the trace whose bytecode holds {@code pc}, or 0. */
  private static long protoHolding(TargetReader r, TraceIr ir, long pc) throws WalkException {
    for (long proto : ir.gcConstants(TraceIr.IRT_PROTO)) {
      if (proto <= 4096 || r.u8(proto + Layout.GC_GCT, "proto") != Layout.GCT_PROTO) {
        continue;
      }
      long bc = proto + Layout.PROTO_SIZE;
      long sizeBc = r.u32(proto + Layout.PT_SIZEBC, "proto") & 0xffffffffL;
      if (Long.compareUnsigned(pc, bc) >= 0 && Long.compareUnsigned(pc, bc + 4 * sizeBc) < 0) {
        return proto;
      }
    }
    return 0;
  }

  /** A 64-bit IR constant of the trace (KGC or KNUM) a snapshot entry refers to. */
  static long constant(TraceIr ir, Integer entry, String what) throws WalkException {
    if (entry == null) {
      throw new WalkException("trace_" + what + "_not_in_snapshot", "missing slot");
    }
    int ref = entry & 0xffff;
    if (ref >= TraceIr.REF_BIAS) {
      throw new WalkException("trace_" + what + "_not_constant", "ref " + ref);
    }
    return ir.constant(ref);
  }
}
