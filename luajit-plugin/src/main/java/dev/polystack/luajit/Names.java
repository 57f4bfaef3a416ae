package dev.polystack.luajit;

import java.nio.charset.StandardCharsets;

/**
 * LuaJIT's own naming rules (lj_debug_funcname / lj_debug_slotname), applied to the target's
 * bytecode from outside: a function is named after how its caller reached it, a local, global,
 * field, method or upvalue, or a metamethod. Every scan is bounded.
 */
final class Names {
  /** How far back from the call the slot scan looks. */
  static final int WINDOW = 4096;

  static final int MAX_VARINFO = 4 << 10;

  private static final String[] INTERNAL_VARS = {
    "", "(for index)", "(for limit)", "(for step)", "(for generator)", "(for state)",
    "(for control)"
  };

  /** An inferred name and what kind of name it is ({@code global}, {@code method}, ...). */
  record Name(String kind, String name) {}

  private Names() {}

  /** The name a call at {@code pos} of {@code caller} gives its callee, or null. */
  static Name ofCallee(TargetReader r, Protos.Proto caller, int pos) throws WalkException {
    if (pos < 0 || pos >= caller.sizeBc()) {
      return null;
    }
    int ins = instruction(r, caller, pos);
    int op = Bytecode.op(ins);
    int mm = Bytecode.metamethod(op);
    if (mm == Bytecode.MM_CALL) {
      int slot = Bytecode.a(ins);
      if (op == Bytecode.ITERC) {
        slot -= 3;
      }
      return slot(r, caller, pos, slot);
    }
    if (mm != Bytecode.MM_NONE) {
      return new Name("metamethod", Bytecode.METAMETHODS[mm]);
    }
    return null;
  }

  /**
   * The name of the value an instruction at {@code pos} passes in {@code slot} relative to its A
   * operand (e.g. the function given to pcall), or null.
   */
  static Name ofArgument(TargetReader r, Protos.Proto caller, int pos, int offset)
      throws WalkException {
    if (pos < 0 || pos >= caller.sizeBc()) {
      return null;
    }
    int ins = instruction(r, caller, pos);
    if (Bytecode.metamethod(Bytecode.op(ins)) != Bytecode.MM_CALL) {
      return null;
    }
    return slot(r, caller, pos, Bytecode.a(ins) + offset);
  }

  static Name slot(TargetReader r, Protos.Proto pt, int pos, int slot) throws WalkException {
    int ip = pos;
    // One window below the call in all, not per restart: a MOV chain (or hostile bytecode
    // with a self-MOV every few thousand instructions) would otherwise scan 256 windows.
    int floor = Math.max(0, pos - WINDOW);
    for (int restarts = 0; restarts < 256; restarts++) {
      String local = varName(r, pt, ip, slot);
      if (local != null) {
        return new Name("local", local);
      }
      boolean restart = false;
      // A MOV restarts the lookup at the MOV itself (lj_debug_slotname's goto restart): the
      // local it copies may only be active from there, as `local function f` is after its FNEW.
      while (!restart && --ip > floor) {
        int ins = instruction(r, pt, ip);
        int op = Bytecode.op(ins);
        int ra = Bytecode.a(ins);
        int mode = Bytecode.aMode(op);
        if (mode == Bytecode.A_BASE) {
          if (slot >= ra && (op != Bytecode.KNIL || slot <= Bytecode.d(ins))) {
            return null;
          }
        } else if (mode == Bytecode.A_DST && ra == slot) {
          switch (op) {
            case Bytecode.MOV -> {
              slot = Bytecode.d(ins);
              restart = true;
            }
            case Bytecode.GGET -> {
              return new Name("global", constantString(r, pt, Bytecode.d(ins)));
            }
            case Bytecode.TGETS -> {
              String key = constantString(r, pt, Bytecode.c(ins));
              if (ip > 0) {
                int prev = instruction(r, pt, ip - 1);
                if (Bytecode.op(prev) == Bytecode.MOV && Bytecode.a(prev) == ra + 2
                    && Bytecode.d(prev) == Bytecode.b(ins)) {
                  return new Name("method", key);
                }
              }
              return new Name("field", key);
            }
            case Bytecode.UGET -> {
              return new Name("upvalue", upvalueName(r, pt, Bytecode.d(ins)));
            }
            default -> {
              return null;
            }
          }
        }
      }
      if (!restart) {
        return null;
      }
    }
    return null;
  }

  static int instruction(TargetReader r, Protos.Proto pt, int pos) throws WalkException {
    if (pos < 0 || pos >= pt.sizeBc()) {
      throw new WalkException("bad_bytecode_position", pos + " of " + pt.sizeBc());
    }
    return r.u32(pt.bytecode() + 4L * pos, "bytecode");
  }

  private static String constantString(TargetReader r, Protos.Proto pt, int index)
      throws WalkException {
    long k = r.u64(pt.address() + Layout.PT_K, "proto");
    int sizeKgc = r.u32(pt.address() + Layout.PT_SIZEKGC, "proto");
    if (index < 0 || index >= sizeKgc) {
      throw new WalkException("bad_constant", index + " of " + sizeKgc);
    }
    long ref = r.u64(k - 8L * (index + 1), "constant") & Layout.GCVMASK;
    return r.string(ref, 256);
  }

  private static String upvalueName(TargetReader r, Protos.Proto pt, int index)
      throws WalkException {
    int sizeUv = r.u8(pt.address() + Layout.PT_SIZEUV, "proto");
    long info = r.u64(pt.address() + Layout.PT_UVINFO, "proto");
    if (info == 0 || index >= sizeUv) {
      return "?";
    }
    byte[] names = readUpTo(r, info, 4096);
    int start = 0;
    for (int i = 0; i < index; i++) {
      while (start < names.length && names[start] != 0) {
        start++;
      }
      start++;
    }
    int end = start;
    while (end < names.length && names[end] != 0) {
      end++;
    }
    return start < names.length ? new String(names, start, end - start, StandardCharsets.UTF_8)
        : "?";
  }

  /** debug_varname: the name of the {@code slot}-th local active at {@code pos}, or null. */
  private static String varName(TargetReader r, Protos.Proto pt, int pos, int slot)
      throws WalkException {
    long info = r.u64(pt.address() + Layout.PT_VARINFO, "proto");
    if (info == 0) {
      return null;
    }
    byte[] v = readUpTo(r, info, MAX_VARINFO);
    int p = 0;
    long lastPc = 0;
    int[] cursor = new int[1];
    while (p < v.length) {
      int vn = v[p] & 0xff;
      int nameStart = p;
      if (vn < INTERNAL_VARS.length) {
        if (vn == 0) {
          return null;
        }
      } else {
        while (p < v.length && v[p] != 0) {
          p++;
        }
      }
      p++;
      cursor[0] = p;
      long startPc = lastPc + uleb(v, cursor);
      lastPc = startPc;
      if (startPc > pos) {
        return null;
      }
      long endPc = startPc + uleb(v, cursor);
      p = cursor[0];
      if (pos < endPc && slot-- == 0) {
        return vn < INTERNAL_VARS.length ? INTERNAL_VARS[vn]
            : new String(v, nameStart, endOf(v, nameStart) - nameStart, StandardCharsets.UTF_8);
      }
    }
    return null;
  }

  private static int endOf(byte[] v, int start) {
    int e = start;
    while (e < v.length && v[e] != 0) {
      e++;
    }
    return e;
  }

  private static long uleb(byte[] v, int[] cursor) throws WalkException {
    long result = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (cursor[0] >= v.length) {
        throw new WalkException("bad_varinfo", "truncated");
      }
      int b = v[cursor[0]++] & 0xff;
      result |= (long) (b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        return result;
      }
    }
    throw new WalkException("bad_varinfo", "overlong ULEB128");
  }

  /** Reads up to {@code max} bytes, fewer if the region ends (debug info sits at heap ends). */
  private static byte[] readUpTo(TargetReader r, long address, int max) throws WalkException {
    TargetReader.checkPointer(address, "debuginfo");
    byte[] out = new byte[max];
    int n;
    try {
      n = r.stableMemory().read(address, out, 0, max);
    } catch (dev.polystack.plugin.api.MemoryReadException e) {
      throw new WalkException("unreadable_debuginfo", e.getMessage());
    }
    return n == max ? out : java.util.Arrays.copyOf(out, n);
  }
}
