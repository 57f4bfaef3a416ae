package dev.polystack.host.unwind;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.elf.AddressRange;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.testutil.SystemLibraries;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The cache of evaluated CFI rows, filled past {@link ElfUnwindModule#MAX_CACHED_ROWS} with the
 * rows of the system's libc: the least recently used row is evaluated again, recent ones stay.
 */
class ElfUnwindModuleCacheTest {

  @Test
  void moreRowsThanCachedEvictTheLeastRecentlyUsed() throws Exception {
    ElfUnwindModule module = new ElfUnwindModule(ElfFile.open(SystemLibraries.libc()), 0, "libc.so.6");
    List<Long> pcs = new ArrayList<>();
    List<UnwindRow> rows = new ArrayList<>();
    int wanted = ElfUnwindModule.MAX_CACHED_ROWS + 64;
    for (AddressRange range : module.elf().executableRanges()) {
      for (long pc = range.start(); pc < range.end() && rows.size() < wanted; pc += 16) {
        try {
          rows.add(module.row(pc));
          pcs.add(pc);
        } catch (CfiException e) {
          // no FDE here; cached as a failure, which takes a slot like a row
        }
      }
    }
    assertEquals(wanted, rows.size(), "libc has that many PCs with CFI rows");
    int last = rows.size() - 1;
    assertSame(rows.get(last), module.row(pcs.get(last)), "a recent row stays cached");
    UnwindRow again = module.row(pcs.get(0));
    assertNotSame(rows.get(0), again, "the least recently used row was evicted");
    assertEquals(rows.get(0).toString(), again.toString(), "and evaluates the same again");
    assertSame(again, module.row(pcs.get(0)), "then stays cached");
    assertTrue(pcs.get(last) > pcs.get(0));
  }
}
