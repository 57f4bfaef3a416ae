package dev.polystack.host.elf;

/** The fields of an ELF64 file header that matter for reading the rest of the object. */
public record ElfHeader(
    int osAbi,
    int type,
    int machine,
    long entry,
    long programHeaderOffset,
    long sectionHeaderOffset,
    int flags,
    int programHeaderEntrySize,
    int programHeaderCount,
    int sectionHeaderEntrySize,
    int sectionHeaderCount,
    int sectionNameTableIndex) {

  public static final int ET_REL = 1;
  public static final int ET_EXEC = 2;
  public static final int ET_DYN = 3;
  public static final int EM_X86_64 = 62;

  public ElfHeader {
    if (programHeaderCount < 0 || sectionHeaderCount < 0) {
      throw new IllegalArgumentException("negative header count");
    }
  }

  /**
   * ET_EXEC objects run at their link-time addresses (load bias 0); ET_DYN objects (shared
   * libraries, PIE executables, the vDSO) get a load bias chosen at map time, so runtime addresses
   * must have the bias subtracted before symbol or FDE lookup.
   */
  public boolean isPositionIndependent() {
    return type == ET_DYN;
  }
}
