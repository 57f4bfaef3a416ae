package dev.polystack.luajit;

import static dev.polystack.luajit.SparseMemory.put;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** LuaJIT's naming rules (lj_debug_slotname) on bytecode as luajit -bl lists it. */
class NamesTest {
  private static final long PROTO = 0x100000;
  private static final long VARINFO = 0x200000;

  private static int ins(int op, int a, int d) {
    return op | a << 8 | d << 16;
  }

  /**
   * {@code local function step ... local function hot ... local function driver ...; driver()}:
   * a local function is active only from the instruction after its FNEW, the MOV that copies it
   * for the call. The MOV's source is looked up at the MOV itself (lj_debug_slotname's goto
   * restart), or driver is not active yet and the frame goes unnamed.
   */
  @Test
  void aLocalFunctionCalledRightAfterItsDefinitionIsNamed() throws WalkException {
    SparseMemory m = new SparseMemory();
    int[] code = {
      89 /* FUNCV */, ins(51, 0, 0) /* FNEW 0 */, ins(51, 1, 1), ins(51, 2, 2),
      ins(Bytecode.MOV, 3, 2), ins(Bytecode.CALL, 3, 1 | 1 << 8), ins(75, 0, 1) /* RET0 */};
    byte[] pt = new byte[Layout.PROTO_SIZE + 4 * code.length];
    pt[Layout.GC_GCT] = Layout.GCT_PROTO;
    put(pt, Layout.PT_VARINFO, VARINFO, 8);
    for (int i = 0; i < code.length; i++) {
      put(pt, Layout.PROTO_SIZE + 4 * i, code[i], 4);
    }
    m.regions.put(PROTO, pt);
    // Name, start PC as a delta from the previous one, length: step 2..7, hot 3..7, driver 4..7.
    byte[] varinfo = ("step\0\u0002\u0005hot\0\u0001\u0004driver\0\u0001\u0003\0")
        .getBytes(StandardCharsets.ISO_8859_1);
    m.regions.put(VARINFO, varinfo);
    Protos.Proto p = new Protos.Proto(PROTO, "traces.lua", 0, 14, code.length, 0, 0);
    TargetReader r = new TargetReader(m, null);
    assertEquals(new Names.Name("local", "driver"), Names.ofCallee(r, p, 5));
    assertEquals(new Names.Name("local", "hot"), Names.slot(r, p, 5, 1));
  }
}
