package dev.polystack.host.monitor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.ProcFs;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Sites resolved in this JVM's own process, checked against its memory and the file. */
class ProbeSitesTest {
  private static final int PID = (int) ProcessHandle.current().pid();

  private static List<MemoryMapping> mappings() throws Exception {
    // This JVM maps memory as it runs: read as ProbeSession does, again when a read tears.
    return ProbeSession.mappings(ProcFs.system(), PID);
  }

  @Test
  void aLibcFunctionsFileOffsetHoldsTheBytesItsAddressHolds() throws Exception {
    List<ProbeSite> sites = ProbeSites.resolve(Path.of("/proc"), PID, mappings(),
        List.of(SiteSpec.parse("libc.so.6:write"), SiteSpec.parse("libc:write%return"),
            SiteSpec.parse("libc.so.6:write+" + secondInstruction())));
    assertEquals(3, sites.size());
    ProbeSite write = sites.get(0);
    assertTrue(write.module().endsWith("/libc.so.6"), write.module());
    assertEquals(write.fileOffset(), sites.get(1).fileOffset());
    assertEquals(write.fileOffset() + secondInstruction(), sites.get(2).fileOffset());
    byte[] file = new byte[16];
    byte[] live = new byte[16];
    try (RandomAccessFile f = new RandomAccessFile(write.file().toFile(), "r");
        RandomAccessFile mem = new RandomAccessFile("/proc/self/mem", "r")) {
      f.seek(write.fileOffset());
      f.readFully(file);
      mem.seek(write.address());
      mem.readFully(live);
    }
    assertArrayEquals(file, live);
  }

  /** Where write's second instruction starts, by objdump (as InstructionStarts reads it). */
  private static long secondInstruction() throws Exception {
    List<ProbeSite> write = ProbeSites.resolve(Path.of("/proc"), PID, mappings(),
        List.of(SiteSpec.parse("libc.so.6:write")));
    dev.polystack.host.elf.ElfFile elf = dev.polystack.host.elf.ElfFile.open(write.get(0).file());
    long entry;
    try (elf) {
      entry = elf.findDynamicSymbol("write").orElseThrow().value();
    }
    Process p = new ProcessBuilder("objdump", "-d", "--start-address=0x"
        + Long.toHexString(entry), "--stop-address=0x" + Long.toHexString(entry + 32),
        write.get(0).file().toString()).start();
    String out = new String(p.getInputStream().readAllBytes());
    p.waitFor();
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^\\s*([0-9a-f]+):\\t")
        .matcher(out);
    while (m.find()) {
      long at = Long.parseLong(m.group(1), 16);
      if (at > entry) {
        return at - entry;
      }
    }
    throw new AssertionError("objdump shows no second instruction of write:\n" + out);
  }

  @Test
  void badSitesSayWhatIsWrong() throws Exception {
    List<MemoryMapping> maps = mappings();
    Path proc = Path.of("/proc");
    assertTrue(assertThrows(ProbeSites.SiteException.class, () -> ProbeSites.resolve(proc, PID,
        maps, List.of(SiteSpec.parse("libnothere.so:f")))).getMessage()
        .startsWith("module libnothere.so is not mapped"));
    assertTrue(assertThrows(ProbeSites.SiteException.class, () -> ProbeSites.resolve(proc, PID,
        maps, List.of(SiteSpec.parse("libc.so.6:no_such_symbol_here")))).getMessage()
        .startsWith("no symbol no_such_symbol_here"));
    assertTrue(assertThrows(ProbeSites.SiteException.class, () -> ProbeSites.resolve(proc, PID,
        maps, List.of(SiteSpec.parse("libc.so.6:environ")))).getMessage()
        .contains("is not a function"));
    assertTrue(assertThrows(ProbeSites.SiteException.class, () -> ProbeSites.resolve(proc, PID,
        maps, List.of(SiteSpec.parse("libc.so.6:write"), SiteSpec.parse("libc:write"))))
        .getMessage().contains("give it once"));
    // write begins with an instruction longer than a byte (a 7-byte cmpb in Debian 12's glibc,
    // endbr64 in CET builds): +1 is inside it
    assertTrue(assertThrows(ProbeSites.SiteException.class, () -> ProbeSites.resolve(proc, PID,
        maps, List.of(SiteSpec.parse("libc.so.6:write+1")))).getMessage()
        .contains("is inside an instruction (the one at +0x0)"));
  }

  @Test
  void hardwareSitesFindTheVdsoInMemoryAndRefuseDataAddresses() throws Exception {
    List<MemoryMapping> maps = mappings();
    MemoryMapping vdso = maps.stream().filter(m -> m.path().equals("[vdso]")).findFirst()
        .orElseThrow();
    List<ProbeSite> sites = ProbeSites.resolve(Path.of("/proc"), PID, maps,
        List.of(SiteSpec.parse("[vdso]:clock_gettime"),
            SiteSpec.parse("[vdso]:__vdso_gettimeofday")), true, false);
    for (ProbeSite s : sites) {
      assertTrue(vdso.contains(s.address()), s + " outside " + vdso);
      assertEquals(vdso.start() + s.fileOffset(), s.address());
    }
    // The same function as the address site of its first instruction.
    ProbeSite at = ProbeSites.resolve(Path.of("/proc"), PID, maps, List.of(SiteSpec.parse(
        "0x" + Long.toHexString(sites.get(0).address()))), true, false).get(0);
    assertEquals("[vdso]", at.module());
    MemoryMapping data = maps.stream().filter(m -> !m.isExecutable()).findFirst().orElseThrow();
    String line = assertThrows(ProbeSites.SiteException.class, () -> ProbeSites.resolve(
        Path.of("/proc"), PID, maps, List.of(SiteSpec.parse("0x"
            + Long.toHexString(data.start()))), true, false)).getMessage();
    assertTrue(line.contains("not in an executable mapping"), line);
    line = assertThrows(ProbeSites.SiteException.class, () -> ProbeSites.resolve(
        Path.of("/proc"), PID, maps, List.of(SiteSpec.parse("[vdso]:clock_gettime")), false, false))
        .getMessage();
    assertTrue(line.contains("add --hw"), line);
    line = assertThrows(ProbeSites.SiteException.class, () -> ProbeSites.resolve(
        Path.of("/proc"), PID, maps, List.of(SiteSpec.parse("libc:read"),
            SiteSpec.parse("libc:write"), SiteSpec.parse("libc:open"),
            SiteSpec.parse("libc:close"), SiteSpec.parse("libc:lseek")), true, false)).getMessage();
    assertTrue(line.contains("at most 4"), line);
    long ret = ProbeSites.resolve(Path.of("/proc"), PID, maps,
        List.of(SiteSpec.parse("[vdso]:clock_gettime%return")), true, false).get(0).returns()
        .get(0);
    line = assertThrows(ProbeSites.SiteException.class, () -> ProbeSites.resolve(
        Path.of("/proc"), PID, maps, List.of(SiteSpec.parse("[vdso]:clock_gettime%return"),
            SiteSpec.parse("0x" + Long.toHexString(ret))), true, false)).getMessage();
    assertTrue(line.contains("at the same instruction"), line);
  }

  @Test
  void aWatchedReturnOfAVdsoFunctionIsAtItsRets() throws Exception {
    List<MemoryMapping> maps = mappings();
    ProbeSite site = ProbeSites.resolve(Path.of("/proc"), PID, maps,
        List.of(SiteSpec.parse("[vdso]:clock_gettime%return")), true, false).get(0);
    assertTrue(!site.returns().isEmpty() && site.returns().size() <= 3, site.toString());
    byte[] b = new byte[1];
    try (RandomAccessFile mem = new RandomAccessFile("/proc/self/mem", "r")) {
      for (long ret : site.returns()) {
        assertTrue(ret > site.address(), site.toString());
        mem.seek(ret);
        mem.readFully(b);
        assertEquals((byte) 0xc3, b[0], "not a ret at 0x" + Long.toHexString(ret));
      }
    }
  }
}
