package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A non-stripped gcc output: .symtab locals, .debug_frame, and ET_EXEC load semantics. */
class DebugFrameTest {
  private static final String PROGRAM = """
      static int helper(int x) { return x * 3 + 1; }
      int exported_fn(int y) { return helper(y) + 2; }
      const char banner[] = "polystack-debug-frame-test";
      int main(int argc, char **argv) { (void) argv; return exported_fn(argc) + banner[0]; }
      """;

  @Test
  void debugFrameAndStaticSymbols(@TempDir Path dir) throws Exception {
    Path exe = TestBinaries.compile(dir, "dbgframe", PROGRAM, "-g", "-O0", "-no-pie", "-fno-asynchronous-unwind-tables",
        "-fno-unwind-tables");
    ElfFile elf = ElfFile.open(exe);
    assertEquals(ElfHeader.ET_EXEC, elf.header().type());
    assertFalse(elf.header().isPositionIndependent());
    FrameTable dbg = elf.debugFrame().orElseThrow();
    assertTrue(dbg.isDebugFrame());
    assertFalse(dbg.hasSearchTable());
    assertFalse(dbg.fdes().isEmpty());
    assertTrue(dbg.cies().stream().allMatch(c -> c.version() == 1 || c.version() == 3 || c.version() == 4));

    ElfSymbol helper = elf.staticSymbols().find("helper").orElseThrow();
    assertEquals(ElfSymbol.STB_LOCAL, helper.binding());
    assertTrue(elf.dynamicSymbols().find("helper").isEmpty());
    for (String name : new String[] {"helper", "exported_fn", "main"}) {
      ElfSymbol s = elf.findSymbol(name).orElseThrow();
      Fde f = dbg.findFde(s.value() + 1).orElseThrow(() -> new AssertionError(name));
      assertEquals(s.value(), f.pcBegin(), name);
      assertEquals(s.size(), f.pcRange(), name);
      assertEquals(s, elf.symbolize(s.value() + 1).orElseThrow().symbol());
    }
    assertEquals(1, elf.findInRodata("polystack-debug-frame-test".getBytes()).size());
    ElfSymbol banner = elf.findSymbol("banner").orElseThrow();
    assertEquals(banner.value(), elf.findInRodata("polystack-debug-frame-test".getBytes()).get(0).address());
  }
}
