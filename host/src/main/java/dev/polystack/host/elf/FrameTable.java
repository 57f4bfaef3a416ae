package dev.polystack.host.elf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * CIEs and FDEs of one .eh_frame or .debug_frame, with PC lookup. The full list is decoded
 * lazily; a lookup uses the .eh_frame_hdr binary search table when there is one, so a single
 * lookup decodes a single FDE.
 */
public final class FrameTable {
  /** Upper bound on records; each needs at least 8 bytes, so real inputs stay far below. */
  private static final int MAX_RECORDS = 4 << 20;

  private final FrameParser parser;
  private final EhFrameHdr hdr;
  private final long sectionAddress;
  private final boolean debugFrame;
  private final Lazy<Parsed> parsed = new Lazy<>(this::parseAll);

  private record Parsed(List<Cie> cies, List<Fde> fdes) {}

  FrameTable(FrameParser parser, EhFrameHdr hdr, long sectionAddress, boolean debugFrame) {
    this.parser = parser;
    this.hdr = hdr;
    this.sectionAddress = sectionAddress;
    this.debugFrame = debugFrame;
  }

  /** True for .debug_frame, false for .eh_frame. */
  public boolean isDebugFrame() {
    return debugFrame;
  }

  /** Link-time address of the section (0 for the unloaded .debug_frame). */
  public long sectionAddress() {
    return sectionAddress;
  }

  /** Whether a usable .eh_frame_hdr binary search table backs {@link #findFde}. */
  public boolean hasSearchTable() {
    return hdr != null && hdr.searchable();
  }

  /** Number of entries in the .eh_frame_hdr table, or -1 without one. */
  public long searchTableSize() {
    return hdr == null ? -1 : hdr.fdeCount();
  }

  public List<Cie> cies() throws ElfParseException {
    return parsed.get().cies();
  }

  /** All FDEs sorted by pc_begin. */
  public List<Fde> fdes() throws ElfParseException {
    return parsed.get().fdes();
  }

  /** The FDE whose range covers the link-time address {@code pc}. */
  public Optional<Fde> findFde(long pc) throws ElfParseException {
    if (hasSearchTable()) {
      long fdeVaddr = hdr.lookup(pc);
      if (fdeVaddr == EhFrameHdr.NOT_FOUND) {
        return Optional.empty();
      }
      long rel = fdeVaddr - sectionAddress;
      FrameParser.Entry e = parser.read(rel);
      if (e.fde() == null) {
        throw new ElfParseException(".eh_frame_hdr entry for pc 0x" + Long.toHexString(pc) + " points to 0x"
            + Long.toHexString(rel) + " in .eh_frame, which is not an FDE");
      }
      return e.fde().contains(pc) ? Optional.of(e.fde()) : Optional.empty();
    }
    List<Fde> list = fdes();
    int lo = 0;
    int hi = list.size() - 1;
    int found = -1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (Long.compareUnsigned(list.get(mid).pcBegin(), pc) <= 0) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    // Overlapping FDEs are malformed but possible: look back over earlier starts too (bounded).
    for (int i = found, n = 0; i >= 0 && n < 64; i--, n++) {
      if (list.get(i).contains(pc)) {
        return Optional.of(list.get(i));
      }
    }
    return Optional.empty();
  }

  private Parsed parseAll() throws ElfParseException {
    List<Cie> cies = new ArrayList<>();
    List<Fde> fdes = new ArrayList<>();
    long rel = 0;
    long size = parser.sectionSize();
    for (int n = 0; rel < size && size - rel >= 4; n++) {
      if (n >= MAX_RECORDS) {
        throw new ElfParseException("frame section: more than " + MAX_RECORDS + " records");
      }
      FrameParser.Entry e = parser.read(rel);
      if (e.terminator() && !debugFrame) {
        break;
      }
      if (e.cie() != null) {
        cies.add(e.cie());
      } else if (e.fde() != null) {
        fdes.add(e.fde());
      }
      if (e.next() <= rel) {
        throw new ElfParseException("frame section: record at 0x" + Long.toHexString(rel) + " does not advance");
      }
      rel = e.next();
    }
    fdes.sort(Comparator.comparing(Fde::pcBegin, Long::compareUnsigned));
    return new Parsed(Collections.unmodifiableList(cies), Collections.unmodifiableList(fdes));
  }
}
