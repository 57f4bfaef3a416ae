package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.Reference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A crafted file must not make the heap hold far more than the file itself (issue: a 4.8 MB ELF
 * whose 200,000 symbols share one 4,000-byte name grew the heap by 782 MB). Heap growth is
 * measured after a full GC with the parsed file still referenced, and compared with the file's
 * size, not an absolute figure.
 */
class SymbolNamesBoundTest {
  private static final int SYMBOLS = 200_000;
  private static final int NAME = 4000;

  @TempDir Path dir;

  @Test
  void symbolsSharingOneLongNameShareOneString() throws Exception {
    byte[] strtab = new byte[NAME + 2];
    Arrays.fill(strtab, 1, NAME + 1, (byte) 'A');
    Path file = dir.resolve("shared-name.so");
    Files.write(file, SyntheticElf.withSymbols(SYMBOLS, strtab, i -> 1));
    long fileSize = Files.size(file);

    long before = usedAfterGc();
    ElfFile elf = ElfFile.open(file);
    SymbolTable table = elf.staticSymbols();
    Symbolizer symbolizer = elf.symbolizer();
    long growth = usedAfterGc() - before;

    System.out.printf("[root-safety] %d symbols sharing a %d-byte name: file %.1f MB, heap"
        + " growth %.1f MB%n", SYMBOLS, NAME, fileSize / 1e6, growth / 1e6);
    // Per symbol: the record, list slots and the address index, about 100 bytes; before names
    // were shared each symbol also held its own 4,000-byte copy (growth ~170x the file).
    assertTrue(growth < 10 * fileSize, "heap grew by " + (growth >> 20) + " MiB for a "
        + (fileSize >> 20) + " MiB file");
    assertEquals(SYMBOLS + 1, table.size());
    assertEquals(NAME, table.symbols().get(1).name().length());
    assertEquals(table.symbols().get(1).name(), table.symbols().get(SYMBOLS).name());
    assertTrue(symbolizer.lookup(0x1000L + 16 * 77 + 3).isPresent());
    Reference.reachabilityFence(elf);
  }

  /**
   * Distinct offsets into one long run of bytes name 200,000 different long names (up to 4,000
   * bytes each, 400 MB if decoded): names are read when asked, so parsing and indexing the table
   * hold none of them, and each name read is what the file says.
   */
  @Test
  void distinctLongNamesAreNotHeldByTheTable() throws Exception {
    int run = 64 << 10;
    byte[] strtab = new byte[run + 2];
    Arrays.fill(strtab, 1, run + 1, (byte) 'B');
    for (int i = 4000; i < run; i += 4000) {
      strtab[i] = 0; // names of at most 4,000 bytes, as the reader allows
    }
    Path file = dir.resolve("many-names.so");
    Files.write(file, SyntheticElf.withSymbols(SYMBOLS, strtab, i -> 1 + (i % (run - 1))));
    long fileSize = Files.size(file);

    long before = usedAfterGc();
    ElfFile elf = ElfFile.open(file);
    SymbolTable table = elf.staticSymbols();
    Symbolizer symbolizer = elf.symbolizer();
    long growth = usedAfterGc() - before;

    System.out.printf("[root-safety] %d symbols with distinct long names: file %.1f MB, heap"
        + " growth %.1f MB%n", SYMBOLS, fileSize / 1e6, growth / 1e6);
    assertTrue(growth < 10 * fileSize, "heap grew by " + (growth >> 20) + " MiB for a "
        + (fileSize >> 20) + " MiB file");
    int offset = 1 + (77 % (run - 1));
    int end = offset;
    while (strtab[end] != 0) {
      end++;
    }
    assertEquals(end - offset, table.name(78).length());
    assertTrue(symbolizer.lookup(0x1000L + 16 * 77 + 3).isPresent());
    Reference.reachabilityFence(elf);
  }

  /** Real objects stay far below the cap: the system's libc and luajit still read in full. */
  @Test
  void realBinariesStayUnderTheCap() throws Exception {
    for (Path p : List.of(TestBinaries.require(TestBinaries.LIBC),
        TestBinaries.require(TestBinaries.LUAJIT))) {
      ElfFile elf = ElfFile.open(p);
      assertTrue(elf.dynamicSymbols().size() > 100, p.toString());
      assertTrue(elf.findDynamicSymbol(p.equals(TestBinaries.LIBC) ? "malloc" : "lua_pcall")
          .isPresent(), p.toString());
    }
  }

  private static long usedAfterGc() throws InterruptedException {
    Runtime rt = Runtime.getRuntime();
    long used = Long.MAX_VALUE;
    // A few rounds: one System.gc() may leave young garbage behind under some collectors.
    for (int i = 0; i < 4; i++) {
      System.gc();
      Thread.sleep(20);
      used = Math.min(used, rt.totalMemory() - rt.freeMemory());
    }
    return used;
  }
}
