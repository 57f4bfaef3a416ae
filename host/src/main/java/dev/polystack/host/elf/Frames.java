package dev.polystack.host.elf;

import java.util.Optional;

/**
 * Locates .eh_frame (+ .eh_frame_hdr) and .debug_frame by sections or, failing that, segments.
 * Their bytes are copied into memory at first use ({@link ByteView#region}): FDE lookups run
 * while a target thread is held, and a positional read per lookup would lengthen that pause.
 */
final class Frames {
  private Frames() {}

  static Optional<FrameTable> ehFrame(ElfLayout layout) throws ElfParseException {
    EhFrameHdr hdr = null;
    Long hdrVaddr = null;
    Optional<ProgramHeader> seg = layout.segmentOfType(ProgramHeader.PT_GNU_EH_FRAME);
    Optional<SectionHeader> hdrSec = layout.section(".eh_frame_hdr");
    if (seg.isPresent()) {
      ProgramHeader ph = seg.get();
      long off = layout.segmentDataOffset(ph);
      hdr = EhFrameHdr.read(layout.view.region(off, ph.fileSize(), ".eh_frame_hdr"), off,
          ph.fileSize(), ph.vaddr());
      hdrVaddr = ph.vaddr();
    } else if (hdrSec.isPresent()) {
      long[] r = layout.sectionRange(hdrSec.get());
      hdr = EhFrameHdr.read(layout.view.region(r[0], r[1], ".eh_frame_hdr"), r[0], r[1],
          hdrSec.get().addr());
      hdrVaddr = hdrSec.get().addr();
    }
    Optional<SectionHeader> sec = layout.section(".eh_frame");
    long off;
    long size;
    long vaddr;
    if (sec.isPresent() && sec.get().hasData()) {
      long[] r = layout.sectionRange(sec.get());
      off = r[0];
      size = r[1];
      vaddr = sec.get().addr();
    } else if (hdr != null) {
      vaddr = hdr.ehFramePtr();
      off = layout.vaddrToOffsetOrThrow(vaddr, ".eh_frame_hdr eh_frame_ptr");
      size = layout.loadBytesFrom(vaddr); // parsing stops at the zero terminator before this
    } else {
      return Optional.empty();
    }
    FrameParser parser = new FrameParser(layout.view.region(off, size, ".eh_frame"), off, size,
        vaddr, false, hdrVaddr);
    return Optional.of(new FrameTable(parser, hdr, vaddr, false));
  }

  static Optional<FrameTable> debugFrame(ElfLayout layout) throws ElfParseException {
    Optional<SectionHeader> sec = layout.section(".debug_frame");
    if (sec.isEmpty() || !sec.get().hasData()) {
      return Optional.empty();
    }
    long[] r = layout.sectionRange(sec.get());
    FrameParser parser = new FrameParser(layout.view.region(r[0], r[1], ".debug_frame"), r[0],
        r[1], sec.get().addr(), true, null);
    return Optional.of(new FrameTable(parser, null, sec.get().addr(), true));
  }
}
