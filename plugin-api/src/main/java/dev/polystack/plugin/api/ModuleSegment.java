package dev.polystack.plugin.api;

/**
 * A program header of a module image, as the ELF file states it: where a runtime finds its
 * thread-local block's size and alignment ({@link #PT_TLS}) or what is loaded where
 * ({@link #PT_LOAD}). Addresses are module virtual addresses.
 *
 * @param type {@code p_type}
 * @param flags {@code p_flags} (1 execute, 2 write, 4 read)
 * @since 1.6
 */
public record ModuleSegment(int type, int flags, long virtualAddress, long fileSize,
    long memorySize, long alignment) {
  public static final int PT_LOAD = 1;
  public static final int PT_DYNAMIC = 2;
  public static final int PT_TLS = 7;
}
