package dev.polystack.luajit;

/**
 * Structure offsets of one LuaJIT build (GC64 / LJ_FR2 only), in bytes. Values that never moved
 * across 2.1 are constants here; those that did are fields, discovered per binary.
 *
 * @param luaStateSize sizeof(lua_State): 96 upstream, 112 OpenResty (exdata fields)
 * @param vmstate offset of global_State.vmstate
 * @param curL offset of global_State.cur_L
 * @param jitBase offset of global_State.jit_base
 * @param strLen offset of GCstr.len (moved from 16 to 20 in 2020-09)
 * @param family human-readable name of the global_State layout period
 */
record Layout(int luaStateSize, int vmstate, int curL, int jitBase, int strLen, String family) {

  // lua_State (identical in every GC64 build).
  static final int L_GLREF = 16;
  static final int L_BASE = 32;
  static final int L_TOP = 40;
  static final int L_MAXSTACK = 48;
  static final int L_STACK = 56;
  static final int L_CFRAME = 80;
  static final int L_STACKSIZE = 88;

  // GCobj header.
  static final int GC_GCT = 9;
  static final int GCT_STR = 4;
  static final int GCT_THREAD = 6;
  static final int GCT_PROTO = 7;
  static final int GCT_FUNC = 8;
  static final int GCT_TRACE = 9;
  static final int GCT_UDATA = 12;

  // GCfunc.
  static final int FN_FFID = 10;
  static final int FN_PC = 32;
  static final int FN_CFUNC = 40;

  // GCproto; bytecode follows the header.
  static final int PT_SIZEBC = 12;
  static final int PT_K = 32;
  static final int PT_SIZEKGC = 48;
  static final int PT_CHUNKNAME = 64;
  static final int PT_FIRSTLINE = 72;
  static final int PT_NUMLINE = 76;
  static final int PT_LINEINFO = 80;
  static final int PT_UVINFO = 88;
  static final int PT_VARINFO = 96;
  static final int PT_SIZEUV = 60;
  static final int PROTO_SIZE = 104;

  // GCtrace.
  static final int T_NSNAP = 10;
  static final int T_NINS = 12;
  static final int T_IR = 32;
  static final int T_NK = 40;
  static final int T_NSNAPMAP = 44;
  static final int T_SNAP = 48;
  static final int T_SNAPMAP = 56;
  static final int T_STARTPT = 64;
  static final int T_STARTPC = 72;
  static final int T_STARTINS = 80;
  static final int T_SZMCODE = 84;
  static final int T_MCODE = 88;
  static final int T_MCLOOP = 96;
  static final int T_SPADJUST = 102;
  static final int T_TRACENO = 104;
  /** GCtrace up to and including traceno: what a check that a trace is unchanged reads. */
  static final int T_HEADER_SIZE = 112;

  static final int GCSTR_DATA = 24;

  // x64 POSIX CFRAME, from the interpreter's frame base.
  static final int CFRAME_SIZE = 80;
  static final int CFRAME_SIZE_JIT = 96;
  static final int CF_SAVE_L = 16;
  static final int CF_SAVE_PC = 24;

  /** Low 47 bits of a TValue hold a GC pointer; the tag is above. */
  static final long GCVMASK = (1L << 47) - 1;
  /** The tag (bits 47-63) of a TValue holding a function: LJ_TFUNC, ~8u, in 17 bits. */
  static final long TAG_FUNC = 0x1FFF7L;

  /**
   * Offset of global_State.allocf: first since 2020-06, when the string hash table that came
   * before it moved into StrInternState (read off upstream and OpenResty builds, see
   * docs/allocations.md).
   */
  int allocf() {
    return curL == 344 ? 16 : 0;
  }

  /**
   * Offset of global_State.gc.root, the list of every GC object but strings: GCState follows
   * allocf and allocd, and root follows its two 64-bit sizes and 8 bytes of flags and sweepstr
   * in every GC64 layout.
   */
  int gcRoot() {
    return allocf() + 16 + 24;
  }

  /** The global_State layouts of LuaJIT 2.1 (see docs/luajit.md), keyed by cur_L. */
  static Layout forCurL(int curL, int luaStateSize) {
    return switch (curL) {
      case 344 -> new Layout(luaStateSize, 128, 344, 352, 16, "2.1 beta3..2020-06");
      case 360 -> new Layout(luaStateSize, 176, 360, 368, 16, "2.1 2020-06..2020-09");
      case 368 -> new Layout(luaStateSize, 184, 368, 376, 20, "2.1 2020-09..2025-11");
      case 376 -> new Layout(luaStateSize, 184, 376, 384, 20, "2.1 2025-11..");
      default -> null;
    };
  }
}
