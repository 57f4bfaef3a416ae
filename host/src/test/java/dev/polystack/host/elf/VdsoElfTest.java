package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.*;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Parses a live child process's vDSO as an in-memory image and cross-checks it with ld.so. */
class VdsoElfTest {
  private static final String PROGRAM = """
      #define _GNU_SOURCE
      #include <dlfcn.h>
      #include <stdio.h>
      #include <sys/auxv.h>

      static const char *names[] = {"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time",
                                    "__vdso_getcpu", "__vdso_clock_getres", "__vdso_getrandom"};

      int main(void) {
        void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
        printf("base %lx\\n", (unsigned long) getauxval(AT_SYSINFO_EHDR));
        for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
          void *p = h ? dlvsym(h, names[i], "LINUX_2.6") : NULL;
          printf("%s %lx\\n", names[i], (unsigned long) p);
        }
        printf("ready\\n");
        fflush(stdout);
        while (getchar() != EOF) {
        }
        return 0;
      }
      """;

  @Test
  void childVdsoMatchesDynamicLinker(@TempDir Path dir) throws Exception {
    Path exe = TestBinaries.compile(dir, "vdso_probe", PROGRAM, "-O1", "-ldl");
    Process child = new ProcessBuilder(exe.toString()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    try {
      Map<String, Long> printed = new LinkedHashMap<>();
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.US_ASCII));
      for (String line = out.readLine(); line != null && !line.equals("ready"); line = out.readLine()) {
        String[] kv = line.split(" ");
        printed.put(kv[0], Long.parseUnsignedLong(kv[1], 16));
      }
      VdsoImages.Image img = VdsoImages.read(Long.toString(child.pid()));
      assertEquals(printed.get("base"), img.base(), "AT_SYSINFO_EHDR vs [vdso] mapping");

      ElfFile elf = ElfFile.open(ElfSource.ofImage(img.bytes(), img.base(), "vdso of pid " + child.pid()));
      assertEquals(ElfHeader.ET_DYN, elf.header().type());
      assertEquals(img.base(), elf.loadBias() + elf.imageStartAddress());

      int compared = 0;
      for (Map.Entry<String, Long> e : printed.entrySet()) {
        if (e.getKey().equals("base")) {
          continue;
        }
        boolean optional = e.getKey().equals("__vdso_getrandom");
        if (e.getValue() == 0) {
          assertTrue(optional, e.getKey() + " not resolved by dlvsym");
          assertTrue(elf.findDynamicSymbol(e.getKey() + "@LINUX_2.6").isEmpty(), e.getKey());
          continue;
        }
        for (HashKind kind : HashKind.values()) {
          ElfSymbol s = elf.findDynamicSymbol(e.getKey() + "@LINUX_2.6", kind)
              .orElseThrow(() -> new AssertionError(e.getKey() + " via " + kind));
          assertEquals("LINUX_2.6", s.version());
          assertEquals(e.getValue().longValue(), elf.loadBias() + s.value(), e.getKey() + " via " + kind);
          assertEquals(s, elf.findDynamicSymbol(e.getKey()).orElseThrow());
        }
        ElfSymbol s = elf.findDynamicSymbol(e.getKey()).orElseThrow();
        SymbolMatch m = elf.symbolize(s.value()).orElseThrow();
        assertEquals(s.value(), m.symbol().value(), m.toString());
        assertEquals(0, m.offset());
        compared++;
      }
      assertTrue(compared >= 5, "compared " + compared);
      System.out.println("vDSO at 0x" + Long.toHexString(img.base()) + ": cross-checked " + compared
          + " symbols with dlvsym, " + elf.dynamicSymbols().size() + " dynsym entries");

      long viaHash = elf.dynamicSymbolCount(HashKind.SYSV).orElseThrow();
      long viaGnu = elf.dynamicSymbolCount(HashKind.GNU).orElseThrow();
      assertEquals(viaHash, viaGnu);
      assertEquals(viaHash, elf.dynamicSymbols().size());
      assertTrue(elf.buildId().isPresent());

      ElfSymbol cg = elf.findDynamicSymbol("__vdso_clock_gettime").orElseThrow();
      assertTrue(elf.findFde(cg.value()).orElseThrow().contains(cg.value()));
    } finally {
      child.getOutputStream().close(); // EOF on stdin lets the child exit
      if (!child.waitFor(10, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    }
    assertEquals(0, child.exitValue());
  }

  /** The same checks must hold when the section headers are ignored (dynamic segment only). */
  @Test
  void ownVdsoWithoutSections() throws Exception {
    VdsoImages.Image img = VdsoImages.read("self");
    byte[] bytes = img.bytes().clone();
    for (int i = 40; i < 48; i++) {
      bytes[i] = 0; // e_shoff
    }
    bytes[60] = 0;
    bytes[61] = 0; // e_shnum
    ElfFile full = ElfFile.open(ElfSource.ofImage(img.bytes(), img.base(), "vdso"));
    ElfFile bare = ElfFile.open(ElfSource.ofImage(bytes, img.base(), "vdso without sections"));
    assertTrue(bare.sections().isEmpty());
    assertEquals(full.dynamicSymbols().symbols(), bare.dynamicSymbols().symbols());
    assertEquals(full.buildId(), bare.buildId());
    assertEquals(full.ehFrame().orElseThrow().fdes(), bare.ehFrame().orElseThrow().fdes());
    ElfSymbol t = bare.findDynamicSymbol("__vdso_time@@LINUX_2.6").orElseThrow();
    assertEquals("__vdso_time@@LINUX_2.6", t.versionedName());

    byte[] badNames = img.bytes().clone();
    badNames[62] = (byte) 0xfe; // e_shstrndx beyond the section count
    ElfFile lenient = ElfFile.open(ElfSource.ofImage(badNames, img.base(), "vdso with broken sections"));
    assertTrue(lenient.sections().isEmpty(), "images fall back to segments when section headers are unusable");
    assertEquals(full.dynamicSymbols().symbols(), lenient.dynamicSymbols().symbols());
    assertThrows(ElfParseException.class, () -> ElfFile.open(ElfSource.ofFileBytes(badNames, "as file")));
  }
}
