package dev.polystack.host.elf;

/** DW_EH_PE_* pointer encodings used by .eh_frame and .eh_frame_hdr. */
public final class PointerEncoding {
  public static final int ABSPTR = 0x00;
  public static final int ULEB128 = 0x01;
  public static final int UDATA2 = 0x02;
  public static final int UDATA4 = 0x03;
  public static final int UDATA8 = 0x04;
  public static final int SLEB128 = 0x09;
  public static final int SDATA2 = 0x0a;
  public static final int SDATA4 = 0x0b;
  public static final int SDATA8 = 0x0c;
  public static final int PCREL = 0x10;
  public static final int TEXTREL = 0x20;
  public static final int DATAREL = 0x30;
  public static final int FUNCREL = 0x40;
  public static final int ALIGNED = 0x50;
  public static final int INDIRECT = 0x80;
  public static final int OMIT = 0xff;

  private PointerEncoding() {}

  /**
   * Where relative encodings are anchored. {@code sectionVaddr} maps cursor offsets to addresses
   * for pcrel; {@code dataRel} is the .eh_frame_hdr address (the only datarel user on x86-64) or
   * null when unknown.
   */
  record Bases(long sectionOffset, long sectionVaddr, Long dataRel) {
    long vaddrOf(long offset) {
      return sectionVaddr + (offset - sectionOffset);
    }
  }

  /** Reads a value in the format part (low nibble) only, as used for FDE pc_range. */
  static long readFormat(ByteView.Cursor c, int enc, String what, ByteView v) throws ElfParseException {
    switch (enc & 0x0f) {
      case ABSPTR:
      case UDATA8:
      case SDATA8:
        return c.u64();
      case ULEB128:
        return c.uleb();
      case UDATA2:
        return c.u16();
      case UDATA4:
        return c.u32();
      case SLEB128:
        return c.sleb();
      case SDATA2:
        return (short) c.u16();
      case SDATA4:
        return (int) c.u32();
      default:
        throw v.error(what + ": unsupported pointer format 0x" + Integer.toHexString(enc) + " at 0x"
            + Long.toHexString(c.pos()));
    }
  }

  /** Decodes one encoded pointer; the indirect bit is reported by the caller, not dereferenced. */
  static long read(ByteView.Cursor c, int enc, Bases bases, String what, ByteView v) throws ElfParseException {
    if (enc == OMIT) {
      throw v.error(what + ": omitted pointer cannot be read");
    }
    int app = enc & 0x70;
    if (app == ALIGNED) {
      long addr = bases.vaddrOf(c.pos());
      long pad = (-addr) & 7;
      c.skip(pad);
      return c.u64();
    }
    long fieldVaddr = bases.vaddrOf(c.pos());
    long raw = readFormat(c, enc, what, v);
    switch (app) {
      case 0:
        return raw;
      case PCREL:
        return fieldVaddr + raw;
      case DATAREL:
        if (bases.dataRel() == null) {
          throw v.error(what + ": datarel pointer without a data base");
        }
        return bases.dataRel() + raw;
      default:
        throw v.error(what + ": unsupported pointer application 0x" + Integer.toHexString(app));
    }
  }

  /** Byte size of fixed-size formats, or -1 for LEB128/unknown. */
  static int fixedSize(int enc) {
    switch (enc & 0x0f) {
      case ABSPTR:
      case UDATA8:
      case SDATA8:
        return 8;
      case UDATA2:
      case SDATA2:
        return 2;
      case UDATA4:
      case SDATA4:
        return 4;
      default:
        return -1;
    }
  }
}
