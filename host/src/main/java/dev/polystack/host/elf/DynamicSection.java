package dev.polystack.host.elf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/** Entries of the dynamic segment up to DT_NULL. Pointer values are link-time addresses. */
public final class DynamicSection {
  public static final long DT_NULL = 0;
  public static final long DT_NEEDED = 1;
  public static final long DT_HASH = 4;
  public static final long DT_STRTAB = 5;
  public static final long DT_SYMTAB = 6;
  public static final long DT_STRSZ = 10;
  public static final long DT_SYMENT = 11;
  public static final long DT_SONAME = 14;
  public static final long DT_GNU_HASH = 0x6ffffef5L;
  public static final long DT_VERSYM = 0x6ffffff0L;
  public static final long DT_VERDEF = 0x6ffffffcL;
  public static final long DT_VERDEFNUM = 0x6ffffffdL;
  public static final long DT_VERNEED = 0x6ffffffeL;
  public static final long DT_VERNEEDNUM = 0x6fffffffL;

  /** Real objects have a few dozen entries; anything beyond this is corruption. */
  private static final int MAX_ENTRIES = 1 << 16;

  private final List<DynamicEntry> entries;

  DynamicSection(List<DynamicEntry> entries) {
    this.entries = Collections.unmodifiableList(new ArrayList<>(entries));
  }

  public List<DynamicEntry> entries() {
    return entries;
  }

  /** Value of the first entry with {@code tag}. */
  public OptionalLong value(long tag) {
    for (DynamicEntry e : entries) {
      if (e.tag() == tag) {
        return OptionalLong.of(e.value());
      }
    }
    return OptionalLong.empty();
  }

  /** Locates PT_DYNAMIC (or the SHT_DYNAMIC section when there are no program headers). */
  static Optional<DynamicSection> parse(ElfLayout layout) throws ElfParseException {
    ByteView v = layout.view;
    long off;
    long size;
    Optional<ProgramHeader> ph = layout.segmentOfType(ProgramHeader.PT_DYNAMIC);
    if (ph.isPresent()) {
      off = layout.segmentDataOffset(ph.get());
      size = layout.memoryImage ? ph.get().memSize() : ph.get().fileSize();
    } else {
      Optional<SectionHeader> sh = layout.sectionOfType(SectionHeader.SHT_DYNAMIC);
      if (sh.isEmpty()) {
        return Optional.empty();
      }
      off = layout.sectionDataOffset(sh.get());
      size = sh.get().size();
    }
    v.check(off, Math.min(size, 16), "dynamic segment");
    long max = Math.min(Long.divideUnsigned(size, 16), (v.size() - off) / 16);
    max = Math.min(max, MAX_ENTRIES);
    List<DynamicEntry> list = new ArrayList<>();
    for (long i = 0; i < max; i++) {
      long tag = v.u64(off + i * 16, "d_tag");
      if (tag == DT_NULL) {
        break;
      }
      list.add(new DynamicEntry(tag, v.u64(off + i * 16 + 8, "d_val")));
    }
    return Optional.of(new DynamicSection(list));
  }
}
