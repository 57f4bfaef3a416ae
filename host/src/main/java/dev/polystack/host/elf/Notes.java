package dev.polystack.host.elf;

import java.util.Optional;

/** ELF notes (build id) and .gnu_debuglink. */
final class Notes {
  private static final int NT_GNU_BUILD_ID = 3;
  private static final int MAX_BUILD_ID = 1024;
  private static final int MAX_NOTES = 1 << 16;

  private Notes() {}

  static Optional<BuildId> buildId(ElfLayout layout) throws ElfParseException {
    for (ProgramHeader ph : layout.programHeaders) {
      if (ph.type() == ProgramHeader.PT_NOTE) {
        long off = layout.segmentDataOffset(ph);
        Optional<BuildId> id = scan(layout.view, off, ph.fileSize(), ph.align() == 8 ? 8 : 4);
        if (id.isPresent()) {
          return id;
        }
      }
    }
    for (SectionHeader sh : layout.sections) {
      if (sh.type() == SectionHeader.SHT_NOTE) {
        long[] r = layout.sectionRange(sh);
        Optional<BuildId> id = scan(layout.view, r[0], r[1], sh.addrAlign() == 8 ? 8 : 4);
        if (id.isPresent()) {
          return id;
        }
      }
    }
    return Optional.empty();
  }

  private static long align(long x, int a) {
    return (x + a - 1) & -a;
  }

  private static Optional<BuildId> scan(ByteView v, long off, long size, int alignment) throws ElfParseException {
    v.check(off, size, "note area");
    long end = off + size;
    long p = off;
    for (int n = 0; n < MAX_NOTES && end - p >= 12; n++) {
      long namesz = v.u32(p, "n_namesz");
      long descsz = v.u32(p + 4, "n_descsz");
      long type = v.u32(p + 8, "n_type");
      long name = p + 12;
      long desc = align(name + namesz, alignment);
      long next = align(desc + descsz, alignment);
      if (desc > end || next > end + (alignment - 1) || desc + descsz > end) {
        throw v.error("note at 0x" + Long.toHexString(p) + " (namesz=" + namesz + ", descsz=" + descsz
            + ") overruns its area ending at 0x" + Long.toHexString(end));
      }
      if (type == NT_GNU_BUILD_ID && namesz == 4 && v.u32(name, "note name") == 0x00554e47L) {
        if (descsz == 0 || descsz > MAX_BUILD_ID) {
          throw v.error("build id note at 0x" + Long.toHexString(p) + " has absurd size " + descsz);
        }
        return Optional.of(BuildId.of(v.bytes(desc, descsz, "build id")));
      }
      p = next;
    }
    return Optional.empty();
  }

  static Optional<DebugLink> debugLink(ElfLayout layout) throws ElfParseException {
    Optional<SectionHeader> sh = layout.section(".gnu_debuglink");
    if (sh.isEmpty()) {
      return Optional.empty();
    }
    long[] r = layout.sectionRange(sh.get());
    ByteView v = layout.view;
    String name = v.cstring(r[0], r[0] + r[1], ".gnu_debuglink file name");
    // The CRC follows the NUL-terminated name, padded to 4 bytes. Name length in bytes, not chars.
    long p = r[0];
    while (v.u8(p, ".gnu_debuglink") != 0) {
      p++;
    }
    long crcOff = r[0] + align(p + 1 - r[0], 4);
    if (crcOff + 4 > r[0] + r[1]) {
      throw v.error(".gnu_debuglink: section too short for CRC32 after name '" + name + "'");
    }
    return Optional.of(new DebugLink(name, (int) v.u32(crcOff, ".gnu_debuglink CRC32")));
  }
}
