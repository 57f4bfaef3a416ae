package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.*;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Targeted corruptions of real binaries; each must surface as a descriptive ElfParseException. */
class MalformedInputTest {
  private static byte[] libc;
  private static ElfFile clean;

  @BeforeAll
  static void load() throws Exception {
    libc = Files.readAllBytes(TestBinaries.require(TestBinaries.LIBC));
    clean = ElfFile.open(ElfSource.ofFileBytes(libc, "libc"));
  }

  private static ElfFile open(byte[] b) throws ElfParseException {
    return ElfFile.open(ElfSource.ofFileBytes(b, "corrupt-libc"));
  }

  private static ByteBuffer le(byte[] b) {
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
  }

  @Test
  void headerProblems() {
    assertThrows(ElfParseException.class, () -> open(new byte[0]));
    assertThrows(ElfParseException.class, () -> open(Arrays.copyOf(libc, 63)));
    byte[] b = libc.clone();
    b[4] = 1; // ELFCLASS32
    assertTrue(assertThrows(ElfParseException.class, () -> open(b)).getMessage().contains("ELFCLASS64"));
    byte[] c = libc.clone();
    le(c).putShort(60, (short) 0x7fff); // e_shnum
    ElfParseException e = assertThrows(ElfParseException.class, () -> open(c));
    assertTrue(e.getMessage().contains("corrupt-libc"), e.getMessage());
    byte[] d = libc.clone();
    le(d).putLong(32, Long.MAX_VALUE - 3); // e_phoff
    assertThrows(ElfParseException.class, () -> open(d));
    assertThrows(ElfParseException.class, () -> open(Arrays.copyOf(libc, libc.length / 2)), "truncated shdrs");
  }

  @Test
  void sysvHashChainLoopIsDetected() throws Exception {
    byte[] b = libc.clone();
    SectionHeader hash = clean.section(".hash").orElseThrow();
    ByteBuffer bb = le(b);
    int off = (int) hash.offset();
    long nbucket = bb.getInt(off) & 0xffffffffL;
    long h = SysvHashTable.hash("clock_gettime".getBytes(StandardCharsets.US_ASCII));
    long nchain = bb.getInt(off + 4);
    bb.putInt((int) (off + 8 + (h % nbucket) * 4), 5);
    bb.putInt((int) (off + 8 + nbucket * 4 + 5 * 4), 5); // chain[5] = 5
    ElfFile elf = open(b);
    ElfParseException e = assertThrows(ElfParseException.class,
        () -> elf.findDynamicSymbol("clock_gettime", HashKind.SYSV));
    assertTrue(e.getMessage().contains("loop"), e.getMessage());
    assertEquals(nchain, elf.dynamicSymbolCount(HashKind.SYSV).getAsLong());
    assertTrue(elf.findDynamicSymbol("clock_gettime", HashKind.GNU).isPresent(), "GNU table is intact");
  }

  @Test
  void gnuHashWithoutChainEndsIsBounded() throws Exception {
    byte[] b = libc.clone();
    SectionHeader gh = clean.section(".gnu.hash").orElseThrow();
    ByteBuffer bb = le(b);
    int off = (int) gh.offset();
    long nbuckets = bb.getInt(off);
    long bloom = bb.getInt(off + 8);
    int chains = (int) (off + 16 + bloom * 8 + nbuckets * 4);
    for (int p = chains; p < off + gh.size(); p += 4) {
      bb.putInt(p, bb.getInt(p) & ~1); // clear every end-of-chain bit
    }
    ElfFile elf = open(b);
    assertThrows(ElfParseException.class, () -> elf.dynamicSymbolCount(HashKind.GNU));
    // SysV provides the count, so the table parses; a missing name must not run past the table.
    for (String name : new String[] {"memcpy", "no_such_symbol", "clock_gettime"}) {
      try {
        elf.findDynamicSymbol(name, HashKind.GNU);
      } catch (ElfParseException expected) {
        assertTrue(expected.getMessage().contains("DT_GNU_HASH"), expected.getMessage());
      }
    }
  }

  @Test
  void hugeCountsAreRejected() throws Exception {
    byte[] b = libc.clone();
    SectionHeader hash = clean.section(".hash").orElseThrow();
    le(b).putInt((int) hash.offset() + 4, 0x7fffffff); // nchain
    ElfFile elf = open(b);
    ElfParseException e = assertThrows(ElfParseException.class, elf::dynamicSymbols);
    assertTrue(e.getMessage().contains("nchain"), e.getMessage());
    // The failure is memoized and the same type comes back on later calls.
    assertThrows(ElfParseException.class, elf::dynamicSymbols);
    assertThrows(ElfParseException.class, () -> elf.findDynamicSymbol("memcpy"));
  }

  @Test
  void cieLengthOutOfRange() throws Exception {
    byte[] b = libc.clone();
    SectionHeader eh = clean.section(".eh_frame").orElseThrow();
    long cie = clean.ehFrame().orElseThrow().cies().get(0).offset();
    le(b).putInt((int) (eh.offset() + cie), 0x7ffffff0);
    ElfFile elf = open(b);
    ElfParseException e = assertThrows(ElfParseException.class, () -> elf.ehFrame().orElseThrow().fdes());
    assertTrue(e.getMessage().contains(".eh_frame"), e.getMessage());
  }

  @Test
  void sectionOffsetOutOfRange() throws Exception {
    byte[] b = libc.clone();
    ElfHeader h = clean.header();
    SectionHeader dl = clean.section(".gnu_debuglink").orElseThrow();
    le(b).putLong((int) (h.sectionHeaderOffset() + (long) dl.index() * h.sectionHeaderEntrySize() + 24), -16L);
    ElfFile elf = open(b);
    assertThrows(ElfParseException.class, elf::debugLink);
    assertTrue(elf.buildId().isPresent(), "unrelated accessors still work");
  }

  @Test
  void filesOver2GiBAreRefused(@TempDir Path dir) throws Exception {
    Path big = dir.resolve("big.elf");
    try (RandomAccessFile f = new RandomAccessFile(big.toFile(), "rw")) {
      f.setLength((2L << 30) + 16); // sparse
    }
    ElfParseException e = assertThrows(ElfParseException.class, () -> ElfFile.open(big));
    assertTrue(e.getMessage().contains("2 GiB"), e.getMessage());
    assertThrows(ElfParseException.class, () -> ElfFile.open(dir.resolve("missing")));
  }
}
