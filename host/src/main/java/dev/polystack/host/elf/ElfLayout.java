package dev.polystack.host.elf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Header, segments and sections of one object plus the vaddr/offset mapping between them. Parsed
 * eagerly because everything else depends on it and it is cheap.
 */
final class ElfLayout {
  private static final int EHDR_SIZE = 64;
  private static final int PHDR_SIZE = 56;
  private static final int SHDR_SIZE = 64;
  private static final int PN_XNUM = 0xffff;
  private static final int SHN_XINDEX = 0xffff;
  private static final long PAGE = 4096;

  final ByteView view;
  final boolean memoryImage;
  final long baseAddress;
  final ElfHeader header;
  final List<ProgramHeader> programHeaders;
  final List<SectionHeader> sections;
  /** Link-time vaddr of image offset 0 (memory images) or of the lowest load (files). */
  final long imageStartVaddr;

  private ElfLayout(ByteView view, boolean memoryImage, long baseAddress, ElfHeader header,
      List<ProgramHeader> phdrs, List<SectionHeader> sections) {
    this.view = view;
    this.memoryImage = memoryImage;
    this.baseAddress = baseAddress;
    this.header = header;
    this.programHeaders = phdrs;
    this.sections = sections;
    long start = 0;
    boolean found = false;
    for (ProgramHeader ph : phdrs) {
      if (ph.isLoad()) {
        long s = (ph.vaddr() - ph.offset()) & -PAGE;
        if (!found || Long.compareUnsigned(s, start) < 0) {
          start = s;
          found = true;
        }
      }
    }
    this.imageStartVaddr = start;
  }

  static ElfLayout parse(ElfSource source) throws ElfParseException {
    ByteView v = new ByteView(source);
    if (v.size() < EHDR_SIZE) {
      throw v.error("too small for an ELF64 header (" + v.size() + " bytes)");
    }
    if (v.u32(0, "e_ident") != 0x464c457fL) {
      throw v.error("bad ELF magic");
    }
    if (v.u8(4, "EI_CLASS") != 2) {
      throw v.error("not ELFCLASS64 (EI_CLASS=" + v.u8(4, "EI_CLASS") + ")");
    }
    if (v.u8(5, "EI_DATA") != 1) {
      throw v.error("not little-endian (EI_DATA=" + v.u8(5, "EI_DATA") + ")");
    }
    int osAbi = v.u8(7, "EI_OSABI");
    int type = v.u16(16, "e_type");
    int machine = v.u16(18, "e_machine");
    long entry = v.u64(24, "e_entry");
    long phoff = v.u64(32, "e_phoff");
    long shoff = v.u64(40, "e_shoff");
    int flags = (int) v.u32(48, "e_flags");
    int phentsize = v.u16(54, "e_phentsize");
    int phnum = v.u16(56, "e_phnum");
    int shentsize = v.u16(58, "e_shentsize");
    long shnum = v.u16(60, "e_shnum");
    int shstrndx = v.u16(62, "e_shstrndx");

    // Extended numbering keeps the real counts in section header 0.
    if (phnum == PN_XNUM && shoff != 0 && v.inRange(shoff, SHDR_SIZE)) {
      phnum = (int) Math.min(v.u32(shoff + 44, "section header 0 sh_info"), Integer.MAX_VALUE);
    }
    List<ProgramHeader> phdrs = List.of();
    if (phnum > 0) {
      if (phentsize < PHDR_SIZE) {
        throw v.error("e_phentsize " + phentsize + " < " + PHDR_SIZE);
      }
      if (phnum > v.size() / PHDR_SIZE) {
        throw v.error("e_phnum " + phnum + " larger than input allows");
      }
      v.check(phoff, (long) phnum * phentsize, "program header table at e_phoff");
      List<ProgramHeader> list = new ArrayList<>(phnum);
      for (int i = 0; i < phnum; i++) {
        long o = phoff + (long) i * phentsize;
        list.add(new ProgramHeader(i, (int) v.u32(o, "p_type"), (int) v.u32(o + 4, "p_flags"),
            v.u64(o + 8, "p_offset"), v.u64(o + 16, "p_vaddr"), v.u64(o + 24, "p_paddr"),
            v.u64(o + 32, "p_filesz"), v.u64(o + 40, "p_memsz"), v.u64(o + 48, "p_align")));
      }
      phdrs = Collections.unmodifiableList(list);
    }

    List<SectionHeader> sections;
    try {
      sections = parseSections(v, shoff, shnum, shentsize, shstrndx);
    } catch (ElfParseException e) {
      if (!source.isMemoryImage()) {
        throw e;
      }
      // Section headers are optional at runtime and often unmapped or overwritten in a loaded
      // image; everything needed can still come from the segments.
      sections = List.of();
    }
    shnum = sections.size();
    shstrndx = sections.isEmpty() ? 0 : shstrndx;
    ElfHeader header = new ElfHeader(osAbi, type, machine, entry, phoff, shoff, flags, phentsize, phnum,
        shentsize, (int) shnum, shstrndx);
    return new ElfLayout(v, source.isMemoryImage(), source.baseAddress(), header, phdrs, sections);
  }

  private static List<SectionHeader> parseSections(ByteView v, long shoff, long shnum, int shentsize, int shstrndx)
      throws ElfParseException {
    if (shoff == 0) {
      return List.of();
    }
    v.check(shoff, SHDR_SIZE, "section header 0 at e_shoff");
    if (shentsize < SHDR_SIZE) {
      throw v.error("e_shentsize " + shentsize + " < " + SHDR_SIZE);
    }
    if (shnum == 0) {
      shnum = v.u64(shoff + 32, "section header 0 sh_size");
    }
    if (shstrndx == SHN_XINDEX) {
      shstrndx = (int) Math.min(v.u32(shoff + 40, "section header 0 sh_link"), Integer.MAX_VALUE);
    }
    if (shnum == 0) {
      return List.of();
    }
    if (shnum < 0 || shnum > v.size() / SHDR_SIZE) {
      throw v.error("section count " + shnum + " larger than input allows");
    }
    v.check(shoff, shnum * shentsize, "section header table at e_shoff");
    int n = (int) shnum;
    if (shstrndx >= n) {
      throw v.error("e_shstrndx " + shstrndx + " >= section count " + n);
    }
    long strOff = v.u64(shoff + (long) shstrndx * shentsize + 24, "shstrtab sh_offset");
    long strSize = v.u64(shoff + (long) shstrndx * shentsize + 32, "shstrtab sh_size");
    boolean haveNames = shstrndx != 0;
    if (haveNames) {
      v.check(strOff, strSize, "section name table");
    }
    List<SectionHeader> list = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      long o = shoff + (long) i * shentsize;
      long nameOff = v.u32(o, "sh_name");
      String name = "";
      if (haveNames && i != 0) {
        if (nameOff >= strSize) {
          throw v.error("section " + i + " sh_name 0x" + Long.toHexString(nameOff) + " outside name table");
        }
        name = v.cstring(strOff + nameOff, strOff + strSize, "section " + i + " name");
      }
      list.add(new SectionHeader(i, name, (int) v.u32(o + 4, "sh_type"), v.u64(o + 8, "sh_flags"),
          v.u64(o + 16, "sh_addr"), v.u64(o + 24, "sh_offset"), v.u64(o + 32, "sh_size"),
          (int) v.u32(o + 40, "sh_link"), (int) v.u32(o + 44, "sh_info"), v.u64(o + 48, "sh_addralign"),
          v.u64(o + 56, "sh_entsize")));
    }
    return Collections.unmodifiableList(list);
  }

  /** Offset in the input of the byte at link-time {@code vaddr}, if some PT_LOAD backs it. */
  OptionalLong vaddrToOffset(long vaddr) {
    for (ProgramHeader ph : programHeaders) {
      if (!ph.isLoad()) {
        continue;
      }
      long delta = vaddr - ph.vaddr();
      if (Long.compareUnsigned(vaddr, ph.vaddr()) < 0) {
        continue;
      }
      if (memoryImage) {
        if (Long.compareUnsigned(delta, ph.memSize()) < 0) {
          long off = vaddr - imageStartVaddr;
          if (off >= 0 && off < view.size()) {
            return OptionalLong.of(off);
          }
        }
      } else if (Long.compareUnsigned(delta, ph.fileSize()) < 0) {
        long off = ph.offset() + delta;
        if (off >= 0 && off < view.size()) {
          return OptionalLong.of(off);
        }
      }
    }
    return OptionalLong.empty();
  }

  /** Link-time vaddr of the byte at input {@code offset}, if it lies in a PT_LOAD. */
  OptionalLong offsetToVaddr(long offset) {
    if (offset < 0 || offset >= view.size()) {
      return OptionalLong.empty();
    }
    for (ProgramHeader ph : programHeaders) {
      if (!ph.isLoad()) {
        continue;
      }
      if (memoryImage) {
        long vaddr = imageStartVaddr + offset;
        if (ph.containsVaddr(vaddr)) {
          return OptionalLong.of(vaddr);
        }
      } else if (Long.compareUnsigned(offset - ph.offset(), ph.fileSize()) < 0 && offset >= ph.offset()) {
        return OptionalLong.of(ph.vaddr() + (offset - ph.offset()));
      }
    }
    return OptionalLong.empty();
  }

  long vaddrToOffsetOrThrow(long vaddr, String what) throws ElfParseException {
    OptionalLong off = vaddrToOffset(vaddr);
    if (off.isEmpty()) {
      throw view.error(what + ": address 0x" + Long.toHexString(vaddr) + " not backed by any PT_LOAD");
    }
    return off.getAsLong();
  }

  /**
   * A d_ptr value from the dynamic section. ld.so rewrites these in place to runtime addresses for
   * most loaded objects, so a memory image may hold relocated values: try both interpretations.
   */
  long dynamicPointerToOffset(long value, String what) throws ElfParseException {
    OptionalLong off = vaddrToOffset(value);
    if (off.isEmpty() && memoryImage) {
      off = vaddrToOffset(value - loadBias());
    }
    if (off.isEmpty()) {
      throw view.error(what + ": address 0x" + Long.toHexString(value) + " not backed by any PT_LOAD");
    }
    return off.getAsLong();
  }

  /** Bytes from {@code vaddr} to the end of the PT_LOAD data containing it (0 when unmapped). */
  long loadBytesFrom(long vaddr) {
    OptionalLong off = vaddrToOffset(vaddr);
    if (off.isEmpty()) {
      return 0;
    }
    for (ProgramHeader ph : programHeaders) {
      if (ph.isLoad() && ph.containsVaddr(vaddr)) {
        long span = (memoryImage ? ph.memSize() : ph.fileSize()) - (vaddr - ph.vaddr());
        if (span > 0) {
          return Math.min(span, view.size() - off.getAsLong());
        }
      }
    }
    return 0;
  }

  /** Runtime address minus link-time address; only known for memory images. */
  long loadBias() {
    return memoryImage ? baseAddress - imageStartVaddr : 0;
  }

  /** Input offset of a section's bytes, honouring the image layout. */
  long sectionDataOffset(SectionHeader sh) throws ElfParseException {
    if (memoryImage && sh.isAllocated() && sh.addr() != 0) {
      return vaddrToOffsetOrThrow(sh.addr(), "section " + sh.name());
    }
    return sh.offset();
  }

  /** The section's bytes range, validated against the input. */
  long[] sectionRange(SectionHeader sh) throws ElfParseException {
    long off = sectionDataOffset(sh);
    view.check(off, sh.size(), "section " + sh.name() + " data");
    return new long[] {off, sh.size()};
  }

  /** Offset of a segment's bytes, honouring the image layout. */
  long segmentDataOffset(ProgramHeader ph) throws ElfParseException {
    if (memoryImage) {
      return vaddrToOffsetOrThrow(ph.vaddr(), "segment " + ph.index());
    }
    return ph.offset();
  }

  Optional<SectionHeader> section(String name) {
    for (SectionHeader sh : sections) {
      if (sh.name().equals(name)) {
        return Optional.of(sh);
      }
    }
    return Optional.empty();
  }

  Optional<SectionHeader> sectionOfType(int type) {
    for (SectionHeader sh : sections) {
      if (sh.type() == type) {
        return Optional.of(sh);
      }
    }
    return Optional.empty();
  }

  Optional<ProgramHeader> segmentOfType(int type) {
    for (ProgramHeader ph : programHeaders) {
      if (ph.type() == type) {
        return Optional.of(ph);
      }
    }
    return Optional.empty();
  }

  List<AddressRange> executableRanges() {
    List<AddressRange> out = new ArrayList<>();
    for (ProgramHeader ph : programHeaders) {
      if (ph.isLoad() && ph.isExecutable()) {
        long end = ph.vaddr() + ph.memSize();
        if (Long.compareUnsigned(end, ph.vaddr()) < 0) {
          end = -1L; // saturate instead of wrapping on absurd sizes
        }
        out.add(new AddressRange(ph.vaddr(), end));
      }
    }
    return Collections.unmodifiableList(out);
  }
}
