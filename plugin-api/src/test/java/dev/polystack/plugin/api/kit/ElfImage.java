package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * A small ELF64 little-endian reader that gives plug-ins the {@link ModuleImage} they inspect,
 * without the host: symbols (dynamic and static, without versions), PT_LOAD contents, the GNU
 * build id, read-only data search and .eh_frame FDE ranges. Every offset is checked against the
 * file; a malformed file is an {@link ImageReadException}, never an unchecked exception.
 */
final class ElfImage implements ModuleImage {
  private static final int PT_LOAD = 1;
  private static final int PT_NOTE = 4;
  private static final int PF_X = 1;
  private static final int SHT_PROGBITS = 1;
  private static final int SHT_SYMTAB = 2;
  private static final int SHT_DYNSYM = 11;
  private static final long SHF_WRITE = 1;
  private static final long SHF_ALLOC = 2;
  private static final long SHF_EXECINSTR = 4;
  private static final int MAX_SYMBOLS = 1 << 21;

  private record Segment(int type, int flags, long offset, long vaddr, long filesz, long memsz) {}

  private record Section(String name, int type, long flags, long addr, long offset, long size,
      int link) {}

  private final String name;
  private final ByteBuffer file;
  private final List<Segment> segments = new ArrayList<>();
  private final List<Section> sections = new ArrayList<>();

  private ElfImage(String name, byte[] bytes) {
    this.name = name;
    this.file = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
  }

  static ElfImage parse(String name, byte[] bytes) throws ImageReadException {
    ElfImage image = new ElfImage(name, bytes);
    try {
      image.headers();
    } catch (IndexOutOfBoundsException | IllegalArgumentException e) {
      throw new ImageReadException(name + ": malformed ELF header: " + e.getMessage(), e);
    }
    return image;
  }

  private void headers() throws ImageReadException {
    if (file.capacity() < 64 || file.getInt(0) != 0x464c457f || file.get(4) != 2
        || file.get(5) != 1) {
      throw new ImageReadException(name + ": not an ELF64 little-endian file");
    }
    long phoff = file.getLong(0x20);
    long shoff = file.getLong(0x28);
    int phentsize = Short.toUnsignedInt(file.getShort(0x36));
    int phnum = Short.toUnsignedInt(file.getShort(0x38));
    int shentsize = Short.toUnsignedInt(file.getShort(0x3a));
    int shnum = Short.toUnsignedInt(file.getShort(0x3c));
    int shstrndx = Short.toUnsignedInt(file.getShort(0x3e));
    for (int i = 0; i < phnum; i++) {
      int at = at(phoff + (long) i * phentsize, 56);
      segments.add(new Segment(file.getInt(at), file.getInt(at + 4), file.getLong(at + 8),
          file.getLong(at + 0x10), file.getLong(at + 0x20), file.getLong(at + 0x28)));
    }
    if (shoff == 0 || shnum == 0) {
      return;
    }
    long[][] raw = new long[shnum][];
    for (int i = 0; i < shnum; i++) {
      int at = at(shoff + (long) i * shentsize, 64);
      raw[i] = new long[] {Integer.toUnsignedLong(file.getInt(at)), file.getInt(at + 4),
          file.getLong(at + 8), file.getLong(at + 0x10), file.getLong(at + 0x18),
          file.getLong(at + 0x20), file.getInt(at + 0x28)};
    }
    long strOffset = shstrndx < shnum ? raw[shstrndx][4] : 0;
    for (long[] s : raw) {
      String n = shstrndx < shnum ? string(strOffset + s[0], 256) : "";
      sections.add(new Section(n, (int) s[1], s[2], s[3], s[4], s[5], (int) s[6]));
    }
  }

  /** Checks that {@code length} bytes at {@code offset} lie in the file. */
  private int at(long offset, long length) throws ImageReadException {
    if (offset < 0 || length < 0 || offset > file.capacity() - length) {
      throw new ImageReadException(name + ": offset 0x" + Long.toHexString(offset)
          + " beyond the file");
    }
    return (int) offset;
  }

  private String string(long offset, int max) throws ImageReadException {
    int start = at(offset, 1);
    int end = start;
    while (end < file.capacity() && end - start < max && file.get(end) != 0) {
      end++;
    }
    byte[] b = new byte[end - start];
    file.get(start, b);
    return new String(b, java.nio.charset.StandardCharsets.UTF_8);
  }

  /**
   * Runtime address minus module virtual address for the mappings of this file, from a mapping
   * whose file offset starts a PT_LOAD segment's page; empty if no mapping matches.
   */
  Optional<Long> loadBias(List<dev.polystack.plugin.api.Mapping> maps) {
    for (dev.polystack.plugin.api.Mapping m : maps) {
      if (!m.path().equals(name)) {
        continue;
      }
      for (Segment s : segments) {
        if (s.type() == PT_LOAD && (s.offset() & ~0xfffL) == m.fileOffset()) {
          return Optional.of(m.start() - (s.vaddr() & ~0xfffL));
        }
      }
    }
    return Optional.empty();
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Optional<String> buildId() {
    for (Segment s : segments) {
      if (s.type() != PT_NOTE) {
        continue;
      }
      try {
        long p = s.offset();
        long end = s.offset() + s.filesz();
        while (p + 12 <= end) {
          int q = at(p, 12);
          int namesz = file.getInt(q);
          int descsz = file.getInt(q + 4);
          int type = file.getInt(q + 8);
          if (namesz < 0 || descsz < 0) {
            break;
          }
          long desc = p + 12 + align4(namesz);
          if (type == 3 && namesz == 4 && file.getInt(at(p + 12, 4)) == 0x00554e47) {
            byte[] id = new byte[descsz];
            file.get(at(desc, descsz), id);
            return Optional.of(HexFormat.of().formatHex(id));
          }
          p = desc + align4(descsz);
        }
      } catch (ImageReadException e) {
        return Optional.empty();
      }
    }
    return Optional.empty();
  }

  private static long align4(long n) {
    return (n + 3) & ~3L;
  }

  @Override
  public Optional<ModuleSymbol> symbol(String wanted) throws ImageReadException {
    int at = wanted.indexOf('@');
    String bare = at < 0 ? wanted : wanted.substring(0, at);
    for (ModuleSymbol s : dynamicSymbols()) {
      if (s.name().equals(bare) && s.value() != 0) {
        return Optional.of(s);
      }
    }
    for (ModuleSymbol s : symbols(SHT_SYMTAB)) {
      if (s.name().equals(bare) && s.value() != 0) {
        return Optional.of(s);
      }
    }
    return Optional.empty();
  }

  @Override
  public List<ModuleSymbol> dynamicSymbols() throws ImageReadException {
    return symbols(SHT_DYNSYM);
  }

  private List<ModuleSymbol> symbols(int type) throws ImageReadException {
    List<ModuleSymbol> out = new ArrayList<>();
    for (Section s : sections) {
      if (s.type() != type || s.link() < 0 || s.link() >= sections.size()) {
        continue;
      }
      Section strings = sections.get(s.link());
      long count = s.size() / 24;
      if (count > MAX_SYMBOLS) {
        throw new ImageReadException(name + ": implausible symbol count " + count);
      }
      at(s.offset(), count * 24);
      for (int i = 1; i < count; i++) {
        int e = (int) (s.offset() + i * 24L);
        long nameOffset = Integer.toUnsignedLong(file.getInt(e));
        int info = file.get(e + 4) & 0xff;
        int shndx = Short.toUnsignedInt(file.getShort(e + 6));
        long value = file.getLong(e + 8);
        long size = file.getLong(e + 16);
        if (nameOffset >= strings.size()) {
          continue;
        }
        String n = string(strings.offset() + nameOffset, 1024);
        int bind = info >> 4;
        int kind = info & 0xf;
        boolean function = kind == 2 || kind == 10;
        boolean exported = type == SHT_DYNSYM && shndx != 0 && (bind == 1 || bind == 2);
        out.add(new ModuleSymbol(n, "", false, value, size, function, exported));
      }
    }
    return out;
  }

  @Override
  public boolean hasStaticSymbols() {
    return sections.stream().anyMatch(s -> s.type() == SHT_SYMTAB);
  }

  @Override
  public List<CodeRange> executableRanges() {
    List<CodeRange> out = new ArrayList<>();
    for (Segment s : segments) {
      if (s.type() == PT_LOAD && (s.flags() & PF_X) != 0 && s.memsz() > 0) {
        out.add(new CodeRange(s.vaddr(), s.vaddr() + s.memsz(), "PT_LOAD r-x"));
      }
    }
    return out;
  }

  @Override
  public List<Long> findInReadOnlyData(byte[] needle, int limit) throws ImageReadException {
    List<Long> out = new ArrayList<>();
    if (needle.length == 0 || limit <= 0) {
      return out;
    }
    for (Section s : sections) {
      if (s.type() != SHT_PROGBITS || (s.flags() & SHF_ALLOC) == 0
          || (s.flags() & (SHF_WRITE | SHF_EXECINSTR)) != 0) {
        continue;
      }
      int base = at(s.offset(), s.size());
      for (int i = 0; i + needle.length <= s.size() && out.size() < limit; i++) {
        int j = 0;
        while (j < needle.length && file.get(base + i + j) == needle[j]) {
          j++;
        }
        if (j == needle.length) {
          out.add(s.addr() + i);
        }
      }
    }
    return out;
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length) throws ImageReadException {
    for (Segment s : segments) {
      if (s.type() == PT_LOAD && Long.compareUnsigned(address - s.vaddr(), s.filesz()) < 0) {
        long within = address - s.vaddr();
        int n = (int) Math.min(length, s.filesz() - within);
        file.get(at(s.offset() + within, n), dst, offset, n);
        return n;
      }
    }
    return 0;
  }

  @Override
  public Optional<dev.polystack.plugin.api.ModuleSection> section(String sectionName) {
    for (Section s : sections) {
      if (s.name().equals(sectionName)) {
        return Optional.of(new dev.polystack.plugin.api.ModuleSection(s.name(), s.type(),
            s.flags(), s.addr(), s.size()));
      }
    }
    return Optional.empty();
  }

  /** As the host reads a section's file bytes (API 2.0), bounded by the section and the file. */
  @Override
  public int readSection(dev.polystack.plugin.api.ModuleSection section, long offset,
      byte[] dst, int dstOffset, int length) throws ImageReadException {
    java.util.Objects.checkFromIndexSize(dstOffset, length, dst.length);
    for (Section s : sections) {
      if (s.name().equals(section.name())) {
        if (s.type() == 8 || offset < 0 || offset >= s.size() || s.size() != section.size()) {
          return 0; // SHT_NOBITS, past the end, or another image's section
        }
        int n = (int) Math.min(length, s.size() - offset);
        file.get(at(s.offset() + offset, n), dst, dstOffset, n);
        return n;
      }
    }
    return 0;
  }

  @Override
  public List<CodeRange> unwindRanges() throws ImageReadException {
    for (Section s : sections) {
      if (s.name().equals(".eh_frame")) {
        return EhFrame.ranges(file, at(s.offset(), s.size()), (int) s.size(), s.addr(), name);
      }
    }
    return List.of();
  }

  /** FDE ranges of an .eh_frame section; CIEs are parsed only for their pointer encoding. */
  private static final class EhFrame {
    static List<CodeRange> ranges(ByteBuffer file, int start, int size, long addr, String name)
        throws ImageReadException {
      List<CodeRange> out = new ArrayList<>();
      java.util.Map<Integer, Integer> encodings = new java.util.HashMap<>();
      int p = start;
      int end = start + size;
      try {
        while (p + 4 <= end) {
          long length = Integer.toUnsignedLong(file.getInt(p));
          if (length == 0) {
            break;
          }
          if (length == 0xffffffffL || p + 4 + length > end) {
            throw new ImageReadException(name + ": unsupported or truncated .eh_frame record");
          }
          int idField = p + 4;
          int id = file.getInt(idField);
          int next = (int) (p + 4 + length);
          if (id == 0) {
            encodings.put(p, cieEncoding(file, idField + 4, next));
          } else {
            int cie = idField - id;
            Integer enc = encodings.get(cie);
            int[] cursor = {idField + 4};
            if (enc != null) {
              long begin = pointer(file, cursor, enc, addr + (cursor[0] - start));
              long range = pointer(file, cursor, enc & 0x0f, 0);
              if (range > 0) {
                out.add(new CodeRange(begin, begin + range, "fde"));
              }
            }
          }
          p = next;
        }
      } catch (IndexOutOfBoundsException e) {
        throw new ImageReadException(name + ": truncated .eh_frame", e);
      }
      out.sort(Comparator.comparingLong(CodeRange::start));
      return out;
    }

    /** The FDE pointer encoding ('R' augmentation) of a CIE; absptr when it has none. */
    private static int cieEncoding(ByteBuffer f, int p, int end) {
      int version = f.get(p++) & 0xff;
      StringBuilder aug = new StringBuilder();
      while (p < end && f.get(p) != 0 && aug.length() < 16) {
        aug.append((char) f.get(p++));
      }
      p++;
      int[] c = {p};
      uleb(f, c); // code alignment
      uleb(f, c); // data alignment (sleb; only skipped)
      if (version == 1) {
        c[0]++;
      } else {
        uleb(f, c);
      }
      if (aug.length() == 0 || aug.charAt(0) != 'z') {
        return 0;
      }
      uleb(f, c);
      for (int i = 1; i < aug.length(); i++) {
        switch (aug.charAt(i)) {
          case 'R':
            return f.get(c[0]) & 0xff;
          case 'P': {
            int penc = f.get(c[0]++) & 0xff;
            pointer(f, c, penc & 0x0f, 0);
            break;
          }
          case 'L':
            c[0]++;
            break;
          default:
            return 0;
        }
      }
      return 0;
    }

    private static long uleb(ByteBuffer f, int[] c) {
      long v = 0;
      for (int shift = 0; shift < 64; shift += 7) {
        int b = f.get(c[0]++) & 0xff;
        v |= (long) (b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
          break;
        }
      }
      return v;
    }

    private static long pointer(ByteBuffer f, int[] c, int enc, long fieldAddress) {
      long v = switch (enc & 0x0f) {
        case 0x00, 0x04, 0x0c -> {
          long x = f.getLong(c[0]);
          c[0] += 8;
          yield x;
        }
        case 0x02 -> {
          long x = Short.toUnsignedLong(f.getShort(c[0]));
          c[0] += 2;
          yield x;
        }
        case 0x0a -> {
          long x = f.getShort(c[0]);
          c[0] += 2;
          yield x;
        }
        case 0x03 -> {
          long x = Integer.toUnsignedLong(f.getInt(c[0]));
          c[0] += 4;
          yield x;
        }
        case 0x0b -> {
          long x = f.getInt(c[0]);
          c[0] += 4;
          yield x;
        }
        case 0x01 -> uleb(f, c);
        default -> throw new IndexOutOfBoundsException("pointer encoding 0x"
            + Integer.toHexString(enc));
      };
      return (enc & 0x70) == 0x10 ? fieldAddress + v : v;
    }
  }
}
