package dev.polystack.host.elf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/** Byte-string search in read-only data: .rodata, or read-only non-exec PT_LOADs without sections. */
final class RodataSearch {
  /** Keeps the result list bounded for short needles such as a single byte. */
  static final int MAX_MATCHES = 4096;

  private RodataSearch() {}

  static List<RodataMatch> find(ElfLayout layout, byte[] needle) throws ElfParseException {
    if (needle.length == 0) {
      throw layout.view.error("rodata search: empty needle");
    }
    List<RodataMatch> out = new ArrayList<>();
    Optional<SectionHeader> rodata = layout.section(".rodata");
    if (rodata.isPresent() && rodata.get().hasData()) {
      long[] r = layout.sectionRange(rodata.get());
      search(layout.view, r[0], r[1], rodata.get().addr(), needle, out);
    } else {
      for (ProgramHeader ph : layout.programHeaders) {
        if (ph.isLoad() && !ph.isExecutable() && !ph.isWritable()) {
          long off = layout.segmentDataOffset(ph);
          long size = Math.min(layout.memoryImage ? ph.memSize() : ph.fileSize(), layout.view.size() - off);
          if (size < 0) {
            throw layout.view.error("segment " + ph.index() + " lies outside input");
          }
          search(layout.view, off, size, ph.vaddr(), needle, out);
        }
      }
    }
    return Collections.unmodifiableList(out);
  }

  /** Bytes examined per read, so a huge hostile .rodata is never copied whole. */
  private static final int WINDOW = 1 << 20;

  private static void search(ByteView v, long off, long size, long vaddr, byte[] needle,
      List<RodataMatch> out) throws ElfParseException {
    v.check(off, size, "rodata search area");
    int n = needle.length;
    byte first = needle[0];
    // Windows overlap by n - 1 bytes so a match across a window edge is still seen, once.
    for (long base = 0; base + n <= size && out.size() < MAX_MATCHES; base += WINDOW) {
      byte[] hay = v.bytes(off + base, Math.min(size - base, (long) WINDOW + n - 1),
          "rodata search area");
      outer:
      for (int i = 0; i + n <= hay.length && i < WINDOW && out.size() < MAX_MATCHES; i++) {
        if (hay[i] != first) {
          continue;
        }
        for (int j = 1; j < n; j++) {
          if (hay[i + j] != needle[j]) {
            continue outer;
          }
        }
        out.add(new RodataMatch(off + base + i, vaddr + base + i));
      }
    }
  }
}
