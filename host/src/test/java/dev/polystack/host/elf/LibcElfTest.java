package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class LibcElfTest {
  private static ElfFile elf;

  @BeforeAll
  static void open() throws Exception {
    elf = ElfFile.open(TestBinaries.require(TestBinaries.LIBC));
  }

  @Test
  void hashLookupsAgree() throws Exception {
    SymbolTable dyn = elf.dynamicSymbols();
    assertEquals(dyn.size(), elf.dynamicSymbolCount(HashKind.SYSV).getAsLong());
    assertEquals(dyn.size(), elf.dynamicSymbolCount(HashKind.GNU).getAsLong());
    for (String name : List.of("clock_gettime", "memcpy", "malloc", "printf", "getauxval", "dlsym", "strlen")) {
      ElfSymbol gnu = elf.findDynamicSymbol(name, HashKind.GNU).orElseThrow(() -> new AssertionError(name));
      ElfSymbol sysv = elf.findDynamicSymbol(name, HashKind.SYSV).orElseThrow(() -> new AssertionError(name));
      assertEquals(gnu, sysv, name);
      assertEquals(gnu, dyn.find(name).orElseThrow(), name);
      assertTrue(gnu.isDefined(), name);
    }
    ElfSymbol cg = elf.findDynamicSymbol("clock_gettime").orElseThrow();
    assertEquals("clock_gettime@@GLIBC_2.17", cg.versionedName());
    ElfSymbol old = elf.findDynamicSymbol("clock_gettime@GLIBC_2.2.5").orElseThrow();
    assertEquals("clock_gettime@GLIBC_2.2.5", old.versionedName());
    assertEquals(cg.value(), old.value());
  }

  @Test
  void memcpyVersions() throws Exception {
    ElfSymbol def = elf.findDynamicSymbol("memcpy").orElseThrow();
    assertEquals("memcpy@@GLIBC_2.14", def.versionedName());
    assertTrue(def.isDefaultVersion());
    assertEquals(def, elf.findDynamicSymbol("memcpy@@GLIBC_2.14").orElseThrow());
    assertEquals(def, elf.findDynamicSymbol("memcpy@GLIBC_2.14").orElseThrow());
    ElfSymbol compat = elf.findDynamicSymbol("memcpy@GLIBC_2.2.5").orElseThrow();
    assertEquals("memcpy@GLIBC_2.2.5", compat.versionedName());
    assertTrue(compat.hiddenVersion());
    assertNotEquals(def.value(), compat.value());
    assertTrue(elf.findDynamicSymbol("memcpy@@GLIBC_2.2.5").isEmpty());
    assertTrue(elf.findDynamicSymbol("memcpy@GLIBC_9.99").isEmpty());
    assertEquals(2, elf.dynamicSymbols().named("memcpy").size());
  }

  @Test
  void addressToSymbolRoundTrip() throws Exception {
    int checked = 0;
    for (ElfSymbol s : elf.dynamicSymbols().symbols()) {
      if (!s.isDefined() || !s.isFunction() || s.size() == 0) {
        continue;
      }
      SymbolMatch start = elf.symbolize(s.value()).orElseThrow(() -> new AssertionError(s.toString()));
      assertEquals(s.value(), start.symbol().value(), s.toString());
      assertEquals(0, start.offset());
      SymbolMatch last = elf.symbolize(s.value() + s.size() - 1).orElseThrow();
      assertTrue(last.symbol().contains(s.value() + s.size() - 1), last.toString());
      checked++;
    }
    assertTrue(checked > 1000, "checked " + checked);
    assertTrue(elf.symbolize(0).isEmpty());
    assertTrue(elf.symbolize(-1L).isEmpty());
  }

  @Test
  void sizesAreRespected() throws Exception {
    ElfSymbol s = elf.findDynamicSymbol("clock_gettime").orElseThrow();
    long past = s.value() + s.size();
    Optional<SymbolMatch> m = elf.symbolize(past);
    m.ifPresent(x -> assertNotEquals("clock_gettime", x.symbol().name(), x.toString()));
  }

  @Test
  void fdeCoversFunctions() throws Exception {
    FrameTable eh = elf.ehFrame().orElseThrow();
    assertTrue(eh.hasSearchTable());
    for (String name : List.of("memcpy@GLIBC_2.2.5", "clock_gettime", "malloc", "qsort")) {
      ElfSymbol s = elf.findDynamicSymbol(name).orElseThrow(() -> new AssertionError(name));
      long pc = s.value() + Math.min(4, s.size() - 1);
      Fde f = elf.findFde(pc).orElseThrow(() -> new AssertionError(name));
      assertTrue(f.contains(pc));
      assertTrue(f.contains(s.value()), name + " " + f);
    }
    List<Fde> all = eh.fdes();
    assertEquals(eh.searchTableSize(), all.size());
    for (int i = 0; i < all.size(); i += 7) {
      Fde f = all.get(i);
      assertEquals(f, eh.findFde(f.pcBegin() + f.pcRange() / 2).orElseThrow());
    }
  }

  @Test
  void cieAugmentations() throws Exception {
    FrameTable eh = elf.ehFrame().orElseThrow();
    Cie signal = eh.cies().stream().filter(Cie::signalFrame).findFirst().orElseThrow();
    assertEquals("zRS", signal.augmentation());
    assertTrue(eh.fdes().stream().anyMatch(f -> f.cie().equals(signal)), "signal trampoline FDE");
    Cie withLsda = eh.cies().stream().filter(c -> c.augmentation().equals("zPLR")).findFirst().orElseThrow();
    assertNotEquals(PointerEncoding.OMIT, withLsda.lsdaEncoding());
    assertTrue(withLsda.hasPersonality());
    assertTrue(withLsda.personalityIndirect(), "personality via DW.ref GOT slot");
    Fde f = eh.fdes().stream().filter(x -> x.cie().equals(withLsda) && x.hasLsda() && x.lsda() != 0)
        .findFirst().orElseThrow();
    assertTrue(f.augmentationData().length > 0);
    assertTrue(elf.virtualAddressToOffset(f.lsda()).isPresent(), "LSDA lies in a loaded segment");
  }

  @Test
  void notes() throws Exception {
    assertTrue(elf.buildId().isPresent());
    DebugLink link = elf.debugLink().orElseThrow();
    assertFalse(link.fileName().isEmpty());
  }
}
