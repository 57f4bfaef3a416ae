package dev.polystack.luajit;

import dev.polystack.plugin.api.Bytes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a JIT trace is in Lua terms at one machine-code address, read from its snapshots
 * (lj_snap.c): the snapshot in force at an address is the last one whose mcode offset
 * (SnapShot.mcofs, LuaJIT 2021-03 on) is at or below it, the way lj_trace_unwind finds the exit
 * for an on-trace error. Its map ends with the bytecode PC the interpreter would resume at and
 * how many slots above the trace's base frame the innermost frame lies; frames a trace inlined
 * exist only there, as constants for their functions and frame links.
 *
 * <p>A trace's start PC, the only position known without this, can lie in another function than
 * the frame the trace runs on (a side trace started in a callee and returned into its caller),
 * and says nothing about where in a loop the trace is.
 */
final class TraceSnapshots {
  /** Why a trace's snapshots cannot be used: a layout without mcofs, or not snapshots at all. */
  static final String UNSUPPORTED = "trace_snapshots_unsupported";
  /** -Omaxsnap defaults to 500; a count far beyond it is not a snapshot array. */
  static final int MAX_SNAPSHOTS = 4096;

  // SnapShot (lj_jit.h), 12 bytes since mcofs was added.
  static final int SNAP_SIZE = 12;
  static final int SNAP_MAPOFS = 0;
  static final int SNAP_MCOFS = 6;
  static final int SNAP_NENT = 10;
  // SnapEntry: slot in the top byte, flags, IR reference in the low 16 bits.
  static final int SNAP_FRAME = 0x010000;
  /** IR references below REF_BIAS are constants (lj_ir.h). */
  static final int REF_BIAS = 0x8000;
  /** IRIns is 8 bytes; a 64-bit constant (KGC, KNUM) lives in the slot after its own. */
  static final int IR_SIZE = 8;

  /** Traces whose snapshot tables are kept; a VM rarely has more live than this. */
  static final int MAX_TRACES = 1024;
  static final int MAX_POSITIONS = 8192;

  /**
   * Per trace: where its snapshot map and IR are, and each snapshot's map offset, entry count
   * and mcode offset, validated once. Read only when a sample lands on the trace, so a trace
   * nobody samples costs nothing.
   */
  private record Table(long snapmap, long ir, long nk, long[] mapofs, int[] nent, int[] mcofs) {}

  private static final Table REJECTED = new Table(0, 0, 0, new long[0], new int[0], new int[0]);

  private record PositionKey(Traces.Trace trace, int snapshot) {}

  /**
   * A trace's snapshots and IR constants never change while it lives, and these caches live no
   * longer than the trace list they were read for, so a sample on a known trace reads nothing.
   */
  private final Map<Traces.Trace, Table> tables = new BoundedCache<>(MAX_TRACES);
  private final Map<PositionKey, Position> positions = new BoundedCache<>(MAX_POSITIONS);

  /**
   * Lua frames a trace executes at one point: those it inlined above its base frame (innermost
   * first), and the base frame's own PC.
   *
   * @param basePcExact whether {@code basePc} is the executing instruction (no inlined frame
   *     above) or a return PC into the base frame
   * @param unresolved why inlined frames could not be rebuilt (their function is no constant of
   *     the trace, or a frame is not a Lua call), or null; the base frame's line is then unknown
   */
  record Position(List<LuaStack.Raw> inlined, long basePc, boolean basePcExact,
      String unresolved) {
    Position {
      inlined = List.copyOf(inlined);
    }
  }

  /**
   * @param machinePc an address inside the trace's machine code
   * @param returnAddress whether {@code machinePc} is a return address (a trace's call into C),
   *     which belongs to the call before it
   */
  Position locate(TargetReader r, Traces.Trace t, long machinePc, boolean returnAddress)
      throws WalkException {
    long ofs = machinePc - t.mcode() - (returnAddress ? 1 : 0);
    if (ofs < 0 || ofs >= t.size()) {
      throw new WalkException("trace_pc_outside", "offset " + ofs);
    }
    Table table = tables.get(t);
    if (table == null) {
      try {
        table = table(r, t);
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
    int found = 0;
    for (int i = 0; i < table.mcofs.length && table.mcofs[i] <= ofs; i++) {
      found = i;
    }
    PositionKey key = new PositionKey(t, found);
    Position p = positions.get(key);
    if (p == null) {
      p = position(r, table, table.mapofs[found], table.nent[found]);
      positions.put(key, p);
    }
    return p;
  }

  private static Table table(TargetReader r, Traces.Trace t) throws WalkException {
    long at = t.address();
    int nsnap = r.u16(at + Layout.T_NSNAP, "trace");
    long nsnapmap = r.u32(at + Layout.T_NSNAPMAP, "trace") & 0xffffffffL;
    if (nsnap <= 0 || nsnap > MAX_SNAPSHOTS) {
      throw new WalkException(UNSUPPORTED, "nsnap " + nsnap);
    }
    long snapshots = r.u64(at + Layout.T_SNAP, "trace");
    byte[] snaps = r.bytes(snapshots, SNAP_SIZE * nsnap, "trace_snapshot");
    long[] mapofs = new long[nsnap];
    int[] nent = new int[nsnap];
    int[] mcofs = new int[nsnap];
    for (int i = 0; i < nsnap; i++) {
      mapofs[i] = Bytes.getInt(snaps, SNAP_SIZE * i + SNAP_MAPOFS) & 0xffffffffL;
      mcofs[i] = Bytes.getUnsignedShort(snaps, SNAP_SIZE * i + SNAP_MCOFS);
      nent[i] = snaps[SNAP_SIZE * i + SNAP_NENT] & 0xff;
      // Builds before mcofs existed keep nslots and topslot there: snapshot 0 then never reads
      // as offset 0, and offsets must grow with the snapshot number as the assembler lays out.
      if ((i == 0 && mcofs[i] != 0) || (i > 0 && (mcofs[i] < mcofs[i - 1]
          || mapofs[i] < mapofs[i - 1])) || mcofs[i] >= t.size()
          || mapofs[i] + nent[i] + 2 > nsnapmap) {
        throw new WalkException(UNSUPPORTED, "snapshot " + i + " of trace "
            + t.number());
      }
    }
    return new Table(r.u64(at + Layout.T_SNAPMAP, "trace"), r.u64(at + Layout.T_IR, "trace"),
        r.u32(at + Layout.T_NK, "trace") & 0xffffffffL, mapofs, nent, mcofs);
  }

  private static Position position(TargetReader r, Table t, long mapofs, int nent)
      throws WalkException {
    byte[] map = r.bytes(t.snapmap() + 4 * mapofs, 4 * (nent + 2), "trace_snapshot");
    long pcbase = Bytes.getLong(map, 4 * nent);
    long pc = pcbase >>> 8;
    int depth = (int) (pcbase & 0xff);
    if (depth == 0) {
      return new Position(List.of(), pc, true, null);
    }
    try {
      return inlined(r, t, map, nent, pc, depth);
    } catch (WalkException e) {
      if (!e.reason().startsWith("trace_")) {
        throw e;
      }
      return new Position(List.of(), 0, true, e.reason());
    }
  }

  private static Position inlined(TargetReader r, Table t, byte[] map, int nent, long pc,
      int depth) throws WalkException {
    Map<Integer, Integer> entryBySlot = new HashMap<>();
    for (int e = 0; e < nent; e++) {
      int sn = Bytes.getInt(map, 4 * e);
      entryBySlot.put(sn >>> 24, sn);
    }
    // Down the inlined frames: the function of the innermost sits `depth` slots up (LJ_FR2: a
    // frame is function, link, then its base; the link slot carries the frame flag), each link
    // is the return PC into the caller, whose CALL's A operand says how far below the caller's
    // own function is.
    List<LuaStack.Raw> inlined = new ArrayList<>();
    int fnSlot = depth;
    long framePc = pc;
    boolean exact = true;
    while (fnSlot > 0) {
      Integer linkEntry = entryBySlot.get(fnSlot + 1);
      if (linkEntry == null || (linkEntry & SNAP_FRAME) == 0) {
        throw new WalkException("trace_frame_link_not_in_snapshot", "slot " + (fnSlot + 1));
      }
      long fn = constant(r, t, entryBySlot.get(fnSlot), "function") & Layout.GCVMASK;
      r.expectGcType(fn, Layout.GCT_FUNC, "function");
      if (r.u8(fn + Layout.FN_FFID, "function") != 0) {
        throw new WalkException("trace_inlined_not_lua", "slot " + fnSlot);
      }
      inlined.add(new LuaStack.Raw(fn, 0, framePc, exact, false));
      long link = constant(r, t, linkEntry, "frame_link");
      if ((link & 3) != 0) {
        throw new WalkException("trace_inlined_not_lua", "frame link type " + (link & 7));
      }
      int call = r.u32(link - 4, "bytecode");
      int callerFnSlot = fnSlot - Bytecode.a(call) - 2;
      if (callerFnSlot < 0 || inlined.size() > depth) {
        throw new WalkException("trace_frames_inconsistent", "caller slot " + callerFnSlot);
      }
      fnSlot = callerFnSlot;
      framePc = link;
      exact = false;
    }
    return new Position(inlined, framePc, exact, null);
  }

  /** A 64-bit IR constant of the trace (KGC or KNUM), by reference. */
  private static long constant(TargetReader r, Table t, Integer entry, String what)
      throws WalkException {
    if (entry == null) {
      throw new WalkException("trace_" + what + "_not_in_snapshot", "missing slot");
    }
    int ref = entry & 0xffff;
    if (ref >= REF_BIAS || ref < t.nk()) {
      throw new WalkException("trace_" + what + "_not_constant", "ref " + ref);
    }
    return r.u64(t.ir() + (long) IR_SIZE * (ref + 1), "trace_ir");
  }
}
