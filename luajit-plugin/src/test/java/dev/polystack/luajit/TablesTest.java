package dev.polystack.luajit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/**
 * The builtin tables against the values lj_bc.h, lj_obj.h and each build's jit/vmdef.lua give:
 * a shifted row here would silently mislabel every frame.
 */
class TablesTest {

  @Test
  void bytecodeModesMatchLjBc() {
    assertEquals(Bytecode.A_DST, Bytecode.aMode(Bytecode.MOV));
    assertEquals(Bytecode.A_DST, Bytecode.aMode(Bytecode.GGET));
    assertEquals(Bytecode.A_DST, Bytecode.aMode(Bytecode.TGETS));
    assertEquals(Bytecode.A_DST, Bytecode.aMode(Bytecode.UGET));
    assertEquals(Bytecode.A_BASE, Bytecode.aMode(Bytecode.KNIL));
    assertEquals(Bytecode.A_BASE, Bytecode.aMode(66), "CALL");
    assertEquals(Bytecode.MM_CALL, Bytecode.metamethod(65), "CALLM");
    assertEquals(Bytecode.MM_CALL, Bytecode.metamethod(Bytecode.ITERC));
    assertEquals("__index", Bytecode.METAMETHODS[Bytecode.metamethod(57)], "TGETS");
    assertEquals("__add", Bytecode.METAMETHODS[Bytecode.metamethod(32)], "ADDVV");
    assertEquals("__concat", Bytecode.METAMETHODS[Bytecode.metamethod(38)], "CAT");
    assertEquals("__lt", Bytecode.METAMETHODS[Bytecode.metamethod(0)], "ISLT");
    assertEquals(Bytecode.MM_NONE, Bytecode.metamethod(88), "JMP");
    // Past the common range (upstream's 2026 bit ops) an opcode stops inference, never names.
    assertEquals(Bytecode.A_DST, Bytecode.aMode(92));
    assertEquals(Bytecode.MM_NONE, Bytecode.metamethod(92));
  }

  @Test
  void instructionFieldsDecode() {
    int ins = 0x0302_0142; // op 0x42 = CALL, A = 1, C = 2, B = 3
    assertEquals(66, Bytecode.op(ins));
    assertEquals(1, Bytecode.a(ins));
    assertEquals(2, Bytecode.c(ins));
    assertEquals(3, Bytecode.b(ins));
    assertEquals(0x0302, Bytecode.d(ins));
  }

  @Test
  void layoutsByCurL() {
    Layout debian = Layout.forCurL(368, 96);
    assertEquals(184, debian.vmstate());
    assertEquals(376, debian.jitBase());
    assertEquals(20, debian.strLen());
    assertEquals(128, Layout.forCurL(344, 96).vmstate());
    assertEquals(384, Layout.forCurL(376, 96).jitBase());
    assertNull(Layout.forCurL(352, 96));
  }

  @Test
  void fastFunctionTablesDifferWhereTheBuildsDiffer() {
    assertEquals("pcall", FastFunctions.UPSTREAM.name(indexOf(FastFunctions.UPSTREAM, "pcall")));
    assertEquals("assert", FastFunctions.UPSTREAM.name(2));
    assertEquals("math.abs", FastFunctions.UPSTREAM.name(38));
    assertEquals("thread.exdata", FastFunctions.OPENRESTY.name(38));
    assertEquals("string.format", FastFunctions.UPSTREAM.name(89));
    assertEquals("string.format", FastFunctions.OPENRESTY.name(91));
    assertEquals("builtin#999", FastFunctions.UPSTREAM.name(999));
    assertEquals(FastFunctions.OPENRESTY, FastFunctions.forStateSize(112));
    int sort = indexOf(FastFunctions.UPSTREAM, "table.sort");
    assertEquals(3, FastFunctions.UPSTREAM.calleeArgumentSlot(sort), "table.sort(t, cmp)");
  }

  private static int indexOf(FastFunctions table, String name) {
    for (int i = 0; i < 300; i++) {
      if (table.name(i).equals(name)) {
        return i;
      }
    }
    throw new AssertionError(name + " not in table");
  }
}
