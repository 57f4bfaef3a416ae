package dev.polystack.host.elf;

import java.util.Objects;

/** One ELF64 section header with its resolved name. */
public record SectionHeader(
    int index,
    String name,
    int type,
    long flags,
    long addr,
    long offset,
    long size,
    int link,
    int info,
    long addrAlign,
    long entSize) {

  public static final int SHT_NULL = 0;
  public static final int SHT_PROGBITS = 1;
  public static final int SHT_SYMTAB = 2;
  public static final int SHT_STRTAB = 3;
  public static final int SHT_HASH = 5;
  public static final int SHT_DYNAMIC = 6;
  public static final int SHT_NOTE = 7;
  public static final int SHT_NOBITS = 8;
  public static final int SHT_DYNSYM = 11;
  public static final int SHT_GNU_HASH = 0x6ffffff6;
  public static final int SHT_GNU_VERDEF = 0x6ffffffd;
  public static final int SHT_GNU_VERNEED = 0x6ffffffe;
  public static final int SHT_GNU_VERSYM = 0x6fffffff;
  public static final long SHF_WRITE = 1;
  public static final long SHF_ALLOC = 2;
  public static final long SHF_EXECINSTR = 4;

  public SectionHeader {
    Objects.requireNonNull(name, "name");
    if (index < 0) {
      throw new IllegalArgumentException("index < 0");
    }
  }

  public boolean isAllocated() {
    return (flags & SHF_ALLOC) != 0;
  }

  /** NOBITS sections (.bss, .tbss) occupy no bytes in the file. */
  public boolean hasData() {
    return type != SHT_NOBITS && type != SHT_NULL;
  }
}
