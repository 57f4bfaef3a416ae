package dev.polystack.luajit;

import static dev.polystack.luajit.SparseMemory.put;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Structures a hostile or corrupted target can hand the walk, built byte by byte: each must end
 * in a WalkException (an error frame and a counter) within a small number of reads, never in a
 * runtime exception or a scan of millions of words while the target is stopped.
 */
class HostileStructuresTest {

  /**
   * A trace whose machine code would end past the top of the address space (mcode near 2^64):
   * its code range cannot be built (CodeRange refuses start >= end), so the trace must be
   * refused when read, not blow up later in dynamicCodeRanges.
   */
  @Test
  void aTraceWhoseCodeWrapsTheAddressSpaceIsRefused() {
    SparseMemory m = new SparseMemory();
    long g = 0x100000;
    long offset = 0x460;
    byte[] gs = m.region(g, 0x1000);
    put(gs, (int) offset, 0x200000, 8); // J->trace
    put(gs, (int) offset + 12, 2, 4); // J->sizetrace
    byte[] refs = m.region(0x200000, 16);
    put(refs, 8, 0x300000, 8);
    byte[] t = m.region(0x300000, 128);
    t[Layout.GC_GCT] = Layout.GCT_TRACE;
    put(t, Layout.T_TRACENO, 1, 2);
    put(t, Layout.T_MCODE, -16L, 8);
    put(t, Layout.T_SZMCODE, 0x100, 4);
    TargetReader r = new TargetReader(m, null);
    WalkException e = assertThrows(WalkException.class, () -> Traces.read(r, g, offset));
    assertTrue(e.reason().equals("bad_trace"), e.reason());
  }

  /**
   * Name inference scans back from a call for the instruction that filled the callee's slot; a
   * MOV into that slot restarts the scan for the MOV's source. Bytecode with a self-MOV every
   * 4000 instructions made each restart scan another window: 256 restarts x 4000 reads, about a
   * million 4-byte reads (seconds of process_vm_readv with the target stopped). The scan is now
   * one window below the call in all.
   */
  @Test
  void theSlotNameScanIsOneWindowInAll() throws WalkException {
    SparseMemory m = new SparseMemory();
    int sizeBc = 1 << 20;
    long proto = 0x1000000;
    byte[] pt = m.region(proto, Layout.PROTO_SIZE + 4 * sizeBc);
    for (int k = 0; k < sizeBc; k++) {
      boolean chain = k % 4000 == 0;
      // MOV A=5 D=5 (slot 5 comes from slot 5: restart) or MOV A=6 D=0 (another slot).
      int ins = Bytecode.MOV | (chain ? 5 : 6) << 8 | (chain ? 5 : 0) << 16;
      put(pt, Layout.PROTO_SIZE + 4 * k, ins, 4);
    }
    Protos.Proto p = new Protos.Proto(proto, "x", 1, 1, sizeBc, 0, 0);
    TargetReader r = new TargetReader(m, null);
    assertNull(Names.slot(r, p, sizeBc - 1, 5));
    assertTrue(m.reads <= 2 * Names.WINDOW, m.reads + " reads for one slot name");
  }

  /**
   * A frame slot is a function only if its tag says so: a returning frame's slot may hold a
   * number whose low 47 bits look like an address, and following it read a page of whatever lay
   * there (which a walk from a stack copy lacks, and drops the sample for).
   */
  @Test
  void aSlotIsTakenForAFunctionOnlyWithTheFunctionTag() {
    SparseMemory m = new SparseMemory();
    byte[] slots = m.region(0x100000, 16);
    byte[] fn = m.region(0x200000, 64);
    fn[Layout.GC_GCT] = (byte) Layout.GCT_FUNC;
    TargetReader r = new TargetReader(m, null);

    // The number 2.0000000000009095 (0x4000000000200000): its low bits are the function's address.
    put(slots, 0, 0x4000000000200000L, 8);
    m.reads = 0;
    assertFalse(LuaStack.isFunction(r, 0x100000), "a number whose bits point at a function");
    assertEquals(1, m.reads, "only the slot itself is read");

    put(slots, 8, Layout.TAG_FUNC << 47 | 0x200000, 8);
    assertTrue(LuaStack.isFunction(r, 0x100008));
    fn[Layout.GC_GCT] = 4; // tagged, but the object is a table: refused as before
    assertFalse(LuaStack.isFunction(r, 0x100008));
  }
}
