package dev.polystack.host.elf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.function.IntToLongFunction;

/**
 * Writes a minimal ELF64 shared object holding only a .symtab and its .strtab, the shape a
 * crafted file needs to stress the symbol reader: every symbol a defined function of 16 bytes at
 * its own address, its name at a caller-chosen string table offset.
 */
final class SyntheticElf {
  private static final int EHDR = 64;
  private static final int SHDR = 64;
  private static final int SYM = 24;

  private SyntheticElf() {}

  /**
   * @param symbols number of symbols (entry 0, the null symbol, comes on top)
   * @param strtab the string table's bytes (starts with NUL)
   * @param nameOffset string table offset of symbol {@code i}'s name
   */
  static byte[] withSymbols(int symbols, byte[] strtab, IntToLongFunction nameOffset) {
    byte[] shstrtab = "\0.text\0.symtab\0.strtab\0.shstrtab\0".getBytes(StandardCharsets.US_ASCII);
    long symOff = EHDR;
    long symSize = (long) (symbols + 1) * SYM;
    long strOff = symOff + symSize;
    long shstrOff = strOff + strtab.length;
    long shOff = (shstrOff + shstrtab.length + 7) & ~7L;
    int sections = 5;
    long total = shOff + (long) sections * SHDR;
    ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(total)).order(ByteOrder.LITTLE_ENDIAN);
    b.put(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1, 0});
    b.putShort(16, (short) 3); // ET_DYN
    b.putShort(18, (short) 62); // EM_X86_64
    b.putInt(20, 1);
    b.putLong(40, shOff);
    b.putShort(52, (short) EHDR);
    b.putShort(54, (short) 56);
    b.putShort(58, (short) SHDR);
    b.putShort(60, (short) sections);
    b.putShort(62, (short) 4); // .shstrtab
    for (int i = 1; i <= symbols; i++) {
      int o = (int) (symOff + (long) i * SYM);
      b.putInt(o, (int) nameOffset.applyAsLong(i - 1));
      b.put(o + 4, (byte) 0x12); // STB_GLOBAL, STT_FUNC
      b.putShort(o + 6, (short) 1); // .text
      b.putLong(o + 8, 0x1000L + 16L * i);
      b.putLong(o + 16, 16);
    }
    b.put((int) strOff, strtab);
    b.put((int) shstrOff, shstrtab);
    long textSize = 16L * (symbols + 2);
    section(b, shOff, 1, 1, 8, 0x6, 0x1000, 0, textSize, 0, 0, 16, 0); // .text, SHT_NOBITS
    section(b, shOff, 2, 7, 2, 0, 0, symOff, symSize, 3, 1, 8, SYM); // .symtab
    section(b, shOff, 3, 15, 3, 0, 0, strOff, strtab.length, 0, 0, 1, 0); // .strtab
    section(b, shOff, 4, 23, 3, 0, 0, shstrOff, shstrtab.length, 0, 0, 1, 0); // .shstrtab
    return b.array();
  }

  private static void section(ByteBuffer b, long shOff, int index, int name, int type, long flags,
      long addr, long offset, long size, int link, int info, long align, long entSize) {
    int o = (int) (shOff + (long) index * SHDR);
    b.putInt(o, name);
    b.putInt(o + 4, type);
    b.putLong(o + 8, flags);
    b.putLong(o + 16, addr);
    b.putLong(o + 24, offset);
    b.putLong(o + 32, size);
    b.putInt(o + 40, link);
    b.putInt(o + 44, info);
    b.putLong(o + 48, align);
    b.putLong(o + 56, entSize);
  }
}
