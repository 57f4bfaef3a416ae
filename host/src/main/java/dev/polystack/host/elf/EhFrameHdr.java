package dev.polystack.host.elf;

/**
 * .eh_frame_hdr: pointer to .eh_frame plus a table of (initial location, FDE address) pairs sorted
 * by location, both encoded relative to the start of the header (datarel) on every real toolchain.
 */
final class EhFrameHdr {
  static final long NOT_FOUND = Long.MIN_VALUE;
  private static final int TABLE_ENC = PointerEncoding.DATAREL | PointerEncoding.SDATA4;

  private final ByteView v;
  private final long hdrVaddr;
  private final long ehFramePtr;
  private final long fdeCount;
  private final long tableOff;
  private final boolean searchable;

  private EhFrameHdr(ByteView v, long hdrVaddr, long ehFramePtr, long fdeCount, long tableOff, boolean searchable) {
    this.v = v;
    this.hdrVaddr = hdrVaddr;
    this.ehFramePtr = ehFramePtr;
    this.fdeCount = fdeCount;
    this.tableOff = tableOff;
    this.searchable = searchable;
  }

  static EhFrameHdr read(ByteView v, long off, long size, long vaddr) throws ElfParseException {
    v.check(off, size, ".eh_frame_hdr");
    ByteView.Cursor c = v.cursor(off, off + size, ".eh_frame_hdr");
    int version = c.u8();
    if (version != 1) {
      throw v.error(".eh_frame_hdr at 0x" + Long.toHexString(off) + ": unsupported version " + version);
    }
    int ptrEnc = c.u8();
    int countEnc = c.u8();
    int tableEnc = c.u8();
    PointerEncoding.Bases bases = new PointerEncoding.Bases(off, vaddr, vaddr);
    long ehFramePtr = PointerEncoding.read(c, ptrEnc, bases, ".eh_frame_hdr eh_frame_ptr", v);
    if (countEnc == PointerEncoding.OMIT || tableEnc == PointerEncoding.OMIT) {
      return new EhFrameHdr(v, vaddr, ehFramePtr, 0, c.pos(), false);
    }
    long count = PointerEncoding.read(c, countEnc, bases, ".eh_frame_hdr fde_count", v);
    if (count < 0 || count > c.remaining() / 8) {
      throw v.error(".eh_frame_hdr at 0x" + Long.toHexString(off) + ": fde_count " + count
          + " does not fit in " + c.remaining() + " table bytes");
    }
    // Other table encodings exist only in theory; fall back to a linear decode for them.
    return new EhFrameHdr(v, vaddr, ehFramePtr, count, c.pos(), tableEnc == TABLE_ENC);
  }

  long ehFramePtr() {
    return ehFramePtr;
  }

  long fdeCount() {
    return fdeCount;
  }

  boolean searchable() {
    return searchable;
  }

  /** Link-time address of the FDE for the last table entry with location <= pc. */
  long lookup(long pc) throws ElfParseException {
    long lo = 0;
    long hi = fdeCount - 1;
    long found = -1;
    while (lo <= hi) {
      long mid = (lo + hi) >>> 1;
      long loc = hdrVaddr + (int) v.u32(tableOff + mid * 8, ".eh_frame_hdr table");
      if (Long.compareUnsigned(loc, pc) <= 0) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (found < 0) {
      return NOT_FOUND;
    }
    return hdrVaddr + (int) v.u32(tableOff + found * 8 + 4, ".eh_frame_hdr table");
  }
}
