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
    return ProcFs.system().forPid(PID).maps().mappings();
  }

  @Test
  void aLibcFunctionsFileOffsetHoldsTheBytesItsAddressHolds() throws Exception {
    List<ProbeSite> sites = ProbeSites.resolve(Path.of("/proc"), PID, mappings(),
        List.of(SiteSpec.parse("libc.so.6:write"), SiteSpec.parse("libc:write%return"),
            SiteSpec.parse("libc.so.6:write+4")));
    assertEquals(3, sites.size());
    ProbeSite write = sites.get(0);
    assertTrue(write.module().endsWith("/libc.so.6"), write.module());
    assertEquals(write.fileOffset(), sites.get(1).fileOffset());
    assertEquals(write.fileOffset() + 4, sites.get(2).fileOffset());
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
  }
}
