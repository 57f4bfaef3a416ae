package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class LuajitElfTest {
  private static ElfFile elf;
  private static byte[] raw;

  @BeforeAll
  static void open() throws Exception {
    elf = ElfFile.open(TestBinaries.require(TestBinaries.LUAJIT));
    raw = Files.readAllBytes(TestBinaries.LUAJIT);
  }

  @Test
  void headerAndSegments() {
    assertEquals(ElfHeader.ET_DYN, elf.header().type());
    assertTrue(elf.header().isPositionIndependent());
    assertEquals(ElfHeader.EM_X86_64, elf.header().machine());
    assertFalse(elf.sections().isEmpty());
    assertTrue(elf.section(".text").isPresent());
    List<AddressRange> exec = elf.executableRanges();
    assertEquals(1, exec.size());
    SectionHeader text = elf.section(".text").get();
    assertTrue(exec.get(0).contains(text.addr()));
    assertEquals(text.offset(), elf.virtualAddressToOffset(text.addr()).getAsLong());
    assertEquals(text.addr(), elf.offsetToVirtualAddress(text.offset()).getAsLong());
    assertEquals(0, elf.loadBias());
  }

  @Test
  void exportsLuaApiThroughGnuHash() throws Exception {
    SymbolTable dyn = elf.dynamicSymbols();
    assertTrue(dyn.size() > 100, "dynsym size " + dyn.size());
    for (String name : List.of("lua_pcall", "luaJIT_setmode", "luaL_newstate", "lua_gettop")) {
      ElfSymbol viaHash = elf.findDynamicSymbol(name, HashKind.GNU).orElseThrow(() -> new AssertionError(name));
      assertEquals(viaHash, dyn.find(name).orElseThrow());
      assertTrue(viaHash.isDefined() && viaHash.isFunction() && viaHash.size() > 0, viaHash.toString());
      assertEquals(viaHash, elf.symbolize(viaHash.value() + 1).orElseThrow().symbol());
    }
    assertTrue(elf.findDynamicSymbol("no_such_symbol_xyz").isEmpty());
    assertEquals(dyn.size(), elf.dynamicSymbolCount(HashKind.GNU).getAsLong());
    assertTrue(elf.dynamicSymbolCount(HashKind.SYSV).isEmpty());
    // Undefined imports carry verneed versions.
    assertTrue(dyn.symbols().stream().anyMatch(s -> !s.isDefined() && "GLIBC_2.2.5".equals(s.version())));
  }

  @Test
  void buildIdAndDebugLink() throws Exception {
    BuildId id = elf.buildId().orElseThrow();
    assertEquals(40, id.hex().length());
    byte[] note = id.bytes();
    assertTrue(indexOf(raw, note) > 0, "build id bytes present in file");
    DebugLink link = elf.debugLink().orElseThrow();
    assertTrue(link.fileName().endsWith(".debug"), link.fileName());
  }

  @Test
  void ehFrameWithInterpreterFde() throws Exception {
    FrameTable eh = elf.ehFrame().orElseThrow();
    assertTrue(eh.hasSearchTable());
    List<Fde> fdes = eh.fdes();
    assertTrue(fdes.size() > 500, "fdes " + fdes.size());
    assertEquals(fdes.size(), eh.searchTableSize());
    Cie first = eh.cies().get(0);
    assertTrue(first.augmentation().startsWith("z"), first.augmentation());
    assertEquals(1, first.codeAlignmentFactor());
    assertEquals(-8, first.dataAlignmentFactor());
    assertEquals(16, first.returnAddressRegister());
    Fde big = fdes.stream().max(Comparator.comparingLong(Fde::pcRange)).orElseThrow();
    assertTrue(big.pcRange() > 8192, "largest FDE covers " + big.pcRange() + " bytes");
    assertEquals(big, eh.findFde(big.pcBegin() + big.pcRange() / 2).orElseThrow());
    // The interpreter's hand-written unwind info has its own CIE naming LuaJIT's personality routine.
    Cie vm = big.cie();
    assertEquals("zPR", vm.augmentation());
    assertEquals(PointerEncoding.PCREL | PointerEncoding.SDATA4, vm.personalityEncoding());
    assertFalse(vm.personalityIndirect());
    long personality = vm.personality();
    assertTrue(elf.executableRanges().stream().anyMatch(r -> r.contains(personality)));
    assertTrue(big.instructionsLength() > 0 && vm.initialInstructionsLength() > 0);
    for (Fde f : fdes) {
      Fde viaTable = eh.findFde(f.pcBegin()).orElseThrow(() -> new AssertionError(f.toString()));
      assertEquals(f.offset(), viaTable.offset());
      assertTrue(f.instructionsLength() >= 0);
    }
    assertTrue(eh.findFde(0).isEmpty());
  }

  @Test
  void rodataContainsLuaJitBanner() throws Exception {
    List<RodataMatch> hits = elf.findInRodata("LuaJIT".getBytes(StandardCharsets.US_ASCII));
    assertFalse(hits.isEmpty());
    for (RodataMatch m : hits) {
      assertEquals(m.offset(), elf.virtualAddressToOffset(m.address()).getAsLong());
      assertEquals("LuaJIT", new String(raw, (int) m.offset(), 6, StandardCharsets.US_ASCII));
    }
    assertTrue(elf.findInRodata("definitely not in luajit \u0001\u0002".getBytes(StandardCharsets.UTF_8)).isEmpty());
  }

  /** Same binary with section headers removed: everything must come from the segments. */
  @Test
  void worksWithoutSectionHeaders() throws Exception {
    byte[] copy = raw.clone();
    ByteBuffer b = ByteBuffer.wrap(copy).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(40, 0); // e_shoff
    b.putShort(60, (short) 0); // e_shnum
    b.putShort(62, (short) 0); // e_shstrndx
    ElfFile bare = ElfFile.open(ElfSource.ofFileBytes(copy, "luajit-no-sections"));
    assertTrue(bare.sections().isEmpty());
    assertEquals(elf.dynamicSymbols().size(), bare.dynamicSymbols().size());
    ElfSymbol pcall = bare.findDynamicSymbol("lua_pcall").orElseThrow();
    assertEquals(elf.findDynamicSymbol("lua_pcall").orElseThrow().value(), pcall.value());
    assertEquals(elf.buildId(), bare.buildId());
    assertTrue(bare.debugLink().isEmpty());
    assertEquals(elf.ehFrame().orElseThrow().fdes().size(), bare.ehFrame().orElseThrow().fdes().size());
    assertTrue(bare.findFde(pcall.value()).orElseThrow().contains(pcall.value()));
    assertFalse(bare.findInRodata("LuaJIT".getBytes(StandardCharsets.US_ASCII)).isEmpty());
  }

  static int indexOf(byte[] hay, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (hay[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  @Test
  void buildIdHexRoundTrip() {
    byte[] b = HexFormat.of().parseHex("00ff10");
    assertEquals("00ff10", BuildId.of(b).hex());
  }
}
