package dev.polystack.host.elf;

import java.util.concurrent.ConcurrentHashMap;
import java.util.Map;

/**
 * Decodes CIE and FDE records of .eh_frame or .debug_frame. The two differ in the CIE id value
 * (0 vs all-ones), how an FDE refers to its CIE (relative vs section offset), and in default
 * pointer encoding; the record bodies are otherwise the same.
 */
final class FrameParser {
  /** Result of reading the record at some offset. */
  record Entry(long offset, long next, Cie cie, Fde fde, boolean terminator) {}

  private final ByteView v;
  private final long secOff;
  private final long secEnd;
  private final boolean debugFrame;
  private final PointerEncoding.Bases bases;
  private final String name;
  private final Map<Long, Cie> cieCache = new ConcurrentHashMap<>();

  FrameParser(ByteView v, long secOff, long secSize, long secVaddr, boolean debugFrame, Long dataRel)
      throws ElfParseException {
    v.check(secOff, secSize, debugFrame ? ".debug_frame" : ".eh_frame");
    this.v = v;
    this.secOff = secOff;
    this.secEnd = secOff + secSize;
    this.debugFrame = debugFrame;
    this.bases = new PointerEncoding.Bases(secOff, secVaddr, dataRel);
    this.name = debugFrame ? ".debug_frame" : ".eh_frame";
  }

  long sectionSize() {
    return secEnd - secOff;
  }

  /** Reads the record at section-relative {@code rel}. */
  Entry read(long rel) throws ElfParseException {
    return read(rel, false);
  }

  /** With {@code cieOnly}, an FDE at {@code rel} is reported as an empty entry instead of decoded. */
  private Entry read(long rel, boolean cieOnly) throws ElfParseException {
    long pos = secOff + rel;
    if (rel < 0 || pos + 4 > secEnd) {
      throw v.error(name + ": record offset 0x" + Long.toHexString(rel) + " outside section");
    }
    long length = v.u32(pos, name + " length");
    long body = pos + 4;
    boolean dwarf64 = false;
    if (length == 0xffffffffL) {
      length = v.u64(body, name + " 64-bit length");
      body += 8;
      dwarf64 = true;
    }
    if (length == 0) {
      return new Entry(rel, body - secOff, null, null, true);
    }
    if (length < 0 || length > secEnd - body) {
      throw v.error(name + ": record at 0x" + Long.toHexString(rel) + " length 0x" + Long.toHexString(length)
          + " runs past section end");
    }
    long end = body + length;
    ByteView.Cursor c = v.cursor(body, end, name + " record at 0x" + Long.toHexString(rel));
    long idPos = c.pos();
    long id = dwarf64 ? c.u64() : c.u32();
    boolean isCie = debugFrame ? (dwarf64 ? id == -1L : id == 0xffffffffL) : id == 0;
    if (isCie) {
      return new Entry(rel, end - secOff, cie(rel, c), null, false);
    }
    if (cieOnly) {
      return new Entry(rel, end - secOff, null, null, false);
    }
    long cieRel;
    if (debugFrame) {
      cieRel = id;
    } else {
      cieRel = (idPos - secOff) - id; // eh_frame: distance back from the CIE pointer field
    }
    Cie cie = cieAt(cieRel, rel);
    return new Entry(rel, end - secOff, null, fde(rel, c, cie), false);
  }

  private Cie cieAt(long cieRel, long fromFde) throws ElfParseException {
    Cie cached = cieCache.get(cieRel);
    if (cached != null) {
      return cached;
    }
    if (cieRel < 0 || cieRel >= secEnd - secOff) {
      throw v.error(name + ": FDE at 0x" + Long.toHexString(fromFde) + " points to CIE offset 0x"
          + Long.toHexString(cieRel) + " outside section");
    }
    Entry e = read(cieRel, true); // never recurses into another FDE, so cycles are impossible
    if (e.cie() == null) {
      throw v.error(name + ": FDE at 0x" + Long.toHexString(fromFde) + " points to 0x" + Long.toHexString(cieRel)
          + ", which is not a CIE");
    }
    return e.cie();
  }

  private Cie cie(long rel, ByteView.Cursor c) throws ElfParseException {
    Cie cached = cieCache.get(rel);
    if (cached != null) {
      return cached;
    }
    int version = c.u8();
    if (version != 1 && version != 3 && version != 4) {
      throw v.error(name + ": CIE at 0x" + Long.toHexString(rel) + " has unsupported version " + version);
    }
    String aug = c.cstring();
    if (aug.contains("eh")) {
      c.skip(8); // pre-1998 GCC "eh" augmentation carries a pointer we do not need
    }
    int addressSize = 8;
    int segmentSize = 0;
    if (version == 4) {
      addressSize = c.u8();
      segmentSize = c.u8();
    }
    long caf = c.uleb();
    long daf = c.sleb();
    long ra = version == 1 ? c.u8() : c.uleb();
    int personalityEnc = PointerEncoding.OMIT;
    long personality = 0;
    int lsdaEnc = PointerEncoding.OMIT;
    int fdeEnc = PointerEncoding.ABSPTR;
    boolean signal = false;
    if (aug.startsWith("z")) {
      long augLen = c.uleb();
      if (augLen < 0 || augLen > c.remaining()) {
        throw v.error(name + ": CIE at 0x" + Long.toHexString(rel) + " augmentation length " + augLen
            + " exceeds record");
      }
      long augEnd = c.pos() + augLen;
      for (int i = 1; i < aug.length(); i++) {
        char ch = aug.charAt(i);
        if (ch == 'L') {
          lsdaEnc = c.u8();
        } else if (ch == 'R') {
          fdeEnc = c.u8();
        } else if (ch == 'P') {
          personalityEnc = c.u8();
          personality = PointerEncoding.read(c, personalityEnc, bases, "CIE personality", v);
        } else if (ch == 'S') {
          signal = true;
        } else if (ch == 'B' || ch == 'G') {
          // AArch64 B-key / MTE markers carry no data
        } else {
          break; // unknown augmentation: the rest of the data cannot be interpreted, skip it
        }
      }
      if (c.pos() > augEnd) {
        throw v.error(name + ": CIE at 0x" + Long.toHexString(rel) + " augmentation data overruns its length");
      }
      c.seek(augEnd);
    } else if (aug.contains("S")) {
      signal = true;
    }
    byte[] insns = c.bytes(c.remaining());
    Cie cie = new Cie(rel, version, aug, addressSize, segmentSize, caf, daf, ra, personalityEnc, personality,
        lsdaEnc, fdeEnc, signal, insns);
    cieCache.put(rel, cie);
    return cie;
  }

  private Fde fde(long rel, ByteView.Cursor c, Cie cie) throws ElfParseException {
    int enc = cie.fdeEncoding();
    if (debugFrame && !cie.augmentation().startsWith("z")) {
      enc = cie.addressSize() == 4 ? PointerEncoding.UDATA4 : PointerEncoding.ABSPTR;
      if (cie.segmentSize() > 0) {
        c.skip(cie.segmentSize());
      }
    }
    long pcBegin = PointerEncoding.read(c, enc, bases, "FDE pc_begin", v);
    long pcRange = PointerEncoding.readFormat(c, enc, "FDE pc_range", v);
    byte[] augData = new byte[0];
    boolean hasLsda = false;
    long lsda = 0;
    if (cie.augmentation().startsWith("z")) {
      long len = c.uleb();
      if (len < 0 || len > c.remaining()) {
        throw v.error(name + ": FDE at 0x" + Long.toHexString(rel) + " augmentation length " + len
            + " exceeds record");
      }
      long start = c.pos();
      if (cie.lsdaEncoding() != PointerEncoding.OMIT && len > 0) {
        ByteView.Cursor a = v.cursor(start, start + len, name + " FDE LSDA at 0x" + Long.toHexString(rel));
        lsda = PointerEncoding.read(a, cie.lsdaEncoding(), bases, "FDE LSDA", v);
        hasLsda = true;
      }
      augData = c.bytes(len);
    }
    byte[] insns = c.bytes(c.remaining());
    return new Fde(rel, cie, pcBegin, pcRange, augData, hasLsda, lsda, insns);
  }
}
