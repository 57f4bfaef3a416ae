package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * A function through which a runtime allocates and frees its memory, named so that an
 * allocation profile sees the runtime's own allocations (since API 1.5, with
 * {@link Capability#ALLOCATOR_SITES}). The host probes the function's entry and return itself;
 * the plug-in only says where it is and how its arguments read.
 *
 * @param address the function's entry, a runtime address in the target
 * @param convention how the function's arguments and return value say what it does
 * @param name what the function is, for messages and counters (e.g. {@code lua_Alloc})
 * @since 1.5
 */
public record AllocatorSite(long address, Convention convention, String name) {

  /** How an allocator function's arguments are read (x86-64 System V registers). */
  public enum Convention {
    /**
     * Lua's {@code lua_Alloc}: {@code void *f(void *ud, void *ptr, size_t osize, size_t nsize)}.
     * {@code nsize == 0} frees {@code ptr}; {@code ptr == NULL} allocates {@code nsize} bytes;
     * otherwise {@code ptr} is resized to {@code nsize} bytes; the new block is returned.
     */
    LUA_ALLOC
  }

  public AllocatorSite {
    Objects.requireNonNull(convention, "convention");
    Objects.requireNonNull(name, "name");
    if (address == 0) {
      throw new IllegalArgumentException("an allocator site needs an address");
    }
  }
}
