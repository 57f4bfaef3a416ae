package dev.polystack.host.elf;

/** One ELF64 program header (segment). */
public record ProgramHeader(
    int index, int type, int flags, long offset, long vaddr, long paddr, long fileSize, long memSize, long align) {

  public static final int PT_LOAD = 1;
  public static final int PT_DYNAMIC = 2;
  public static final int PT_NOTE = 4;
  public static final int PT_GNU_EH_FRAME = 0x6474e550;
  public static final int PF_X = 1;
  public static final int PF_W = 2;
  public static final int PF_R = 4;

  public ProgramHeader {
    if (index < 0) {
      throw new IllegalArgumentException("index < 0");
    }
  }

  public boolean isLoad() {
    return type == PT_LOAD;
  }

  public boolean isExecutable() {
    return (flags & PF_X) != 0;
  }

  public boolean isWritable() {
    return (flags & PF_W) != 0;
  }

  public boolean isReadable() {
    return (flags & PF_R) != 0;
  }

  /** Whether {@code address} lies in {@code [vaddr, vaddr + memSize)}, overflow-safe. */
  public boolean containsVaddr(long address) {
    return Long.compareUnsigned(address - vaddr, memSize) < 0 && Long.compareUnsigned(address, vaddr) >= 0;
  }
}
