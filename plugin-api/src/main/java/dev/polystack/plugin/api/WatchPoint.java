package dev.polystack.plugin.api;

/**
 * Memory a runtime-level site names, for a hardware data breakpoint (read/write watchpoint):
 * the host watches {@code length} bytes at {@code address} in every thread of the process and
 * counts each access. What an access means (a Lua function entered: its first bytecode
 * instruction read) is the plug-in's to say in {@code description}.
 *
 * @param address where the watched bytes are in the process; aligned to {@code length}, as the
 *     CPU's debug registers require
 * @param length 1, 2, 4 or 8 bytes
 * @param description what is watched, for the user (e.g. {@code function at app.lua:12, its
 *     first bytecode instruction at 0x7f..}): one line, no newline
 * @since 1.7
 */
public record WatchPoint(long address, int length, String description) {
  public WatchPoint {
    if (length != 1 && length != 2 && length != 4 && length != 8) {
      throw new IllegalArgumentException("watch length " + length + ": 1, 2, 4 or 8 bytes");
    }
    if (address <= 0 || address % length != 0) {
      throw new IllegalArgumentException("watch address 0x" + Long.toHexString(address)
          + " must be positive and aligned to its length " + length);
    }
    if (description == null || description.indexOf('\n') >= 0) {
      throw new IllegalArgumentException("a watch point's description is one line");
    }
  }
}
