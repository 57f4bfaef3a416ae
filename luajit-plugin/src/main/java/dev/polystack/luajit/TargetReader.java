package dev.polystack.luajit;

import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;
import java.nio.charset.StandardCharsets;

/**
 * Bounded, validated reads of LuaJIT objects; every failure is a {@link WalkException} whose
 * reason becomes the error frame and the counter key.
 */
final class TargetReader {
  /** User-space addresses on x86-64 (47 bits); anything else is not a pointer. */
  static final long USER_MAX = 1L << 47;

  static final int MAX_STRING = 512;

  private final RemoteMemory memory;
  private final RemoteMemory stable;
  private final Layout layout;

  TargetReader(RemoteMemory memory, Layout layout) {
    this.memory = memory;
    this.stable = memory.stable();
    this.layout = layout;
  }

  /**
   * What a walk reads that never changes while it lives and lives as long as the code it
   * describes: prototypes with their bytecode, constants and debug info, their strings, traces
   * with the closures they hold as constants.
   * The host may serve these live after the thread resumed. The Lua stack, lua_State, global
   * state, C frames and the trace array change as the program runs, and closures (GCfunc) die
   * young: one on the stack at the stop can be freed and its memory reused before the walk
   * (bench/lua/cpu.lua: 4% of the samples ended in bad_function when closures were read live),
   * so all of these must come from the stop.
   *
   * <p>A switch, not a set: asked on every read, and a set probe costs a hash and a call the
   * host's C1 does not inline (a String caches its hash; equals of the same literal is ==).
   */
  private RemoteMemory memoryFor(String what) {
    switch (what) {
      case "bytecode":
      case "constant":
      case "lineinfo":
      case "proto":
      case "string":
      case "trace":
      case "trace_ir":
      case "trace_snapshot":
      case "trace_mcode":
      case "trace_function":
      case "debuginfo":
        return stable;
      default:
        return memory;
    }
  }

  /** Memory for reads of objects that never change while reachable (see {@link #memoryFor}). */
  RemoteMemory stableMemory() {
    return stable;
  }

  RemoteMemory memory() {
    return memory;
  }

  long u64(long address, String what) throws WalkException {
    checkPointer(address, what);
    try {
      return memoryFor(what).readLong(address);
    } catch (MemoryReadException e) {
      throw new WalkException("unreadable_" + what, e.getMessage());
    }
  }

  int u32(long address, String what) throws WalkException {
    checkPointer(address, what);
    try {
      return memoryFor(what).readInt(address);
    } catch (MemoryReadException e) {
      throw new WalkException("unreadable_" + what, e.getMessage());
    }
  }

  int u8(long address, String what) throws WalkException {
    return bytes(address, 1, what)[0] & 0xff;
  }

  int u16(long address, String what) throws WalkException {
    return Bytes.getUnsignedShort(bytes(address, 2, what), 0);
  }

  byte[] bytes(long address, int length, String what) throws WalkException {
    checkPointer(address, what);
    try {
      return memoryFor(what).readFully(address, length);
    } catch (MemoryReadException e) {
      throw new WalkException("unreadable_" + what, e.getMessage());
    }
  }

  /** A GC object's type tag, checked against what the caller expects. */
  void expectGcType(long object, int gct, String what) throws WalkException {
    int actual = u8(object + Layout.GC_GCT, what);
    if (actual != gct) {
      throw new WalkException("bad_" + what, "object at 0x" + Long.toHexString(object)
          + " has type " + actual + ", expected " + gct);
    }
  }

  /** The contents of a GCstr, cut at {@code max} bytes. */
  String string(long str, int max) throws WalkException {
    expectGcType(str, Layout.GCT_STR, "string");
    int len = u32(str + layout.strLen(), "string");
    if (len < 0) {
      throw new WalkException("bad_string", "negative length");
    }
    int n = Math.min(len, max);
    if (n == 0) {
      return "";
    }
    return new String(bytes(str + Layout.GCSTR_DATA, n, "string"), StandardCharsets.UTF_8);
  }

  static void checkPointer(long address, String what) throws WalkException {
    if (address <= 4096 || address >= USER_MAX) {
      throw new WalkException("bad_pointer_" + what, "0x" + Long.toHexString(address));
    }
  }
}
