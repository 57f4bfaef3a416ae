package dev.polystack.vdso;

import java.util.ArrayList;
import java.util.List;

/**
 * Finds a function's own {@code ret} instructions by decoding it from its first byte to its
 * symbol's end, one instruction after the other (x86-64 lengths for what compilers emit: legacy
 * prefixes, REX, VEX, the one-, two- and three-byte maps). Breakpoints there see every return of
 * the function at fixed addresses. The answer is all or nothing: an opcode it does not know, a
 * jump out of the function (a tail call returns through another function's {@code ret}) or an
 * indirect jump makes it refuse with the reason, and the planner leaves the function out rather
 * than miss returns.
 */
final class ReturnInstructions {
  /** The returns found, or why there is no trustworthy answer. */
  record Result(List<Long> returns, String refusal) {
    boolean ok() {
      return refusal == null;
    }
  }

  private ReturnInstructions() {}

  /**
   * @param code the function's bytes, from its entry, exactly its symbol's size
   * @param address the function's virtual address
   */
  static Result find(byte[] code, long address) {
    List<Long> rets = new ArrayList<>();
    int at = 0;
    while (at < code.length) {
      Insn i = decode(code, at);
      if (i == null) {
        return refuse(String.format("an instruction it cannot decode at +0x%x", at));
      }
      int next = at + i.length;
      if (next > code.length) {
        return refuse(String.format("an instruction runs past the function's end at +0x%x",
            at));
      }
      switch (i.kind) {
        case RET -> rets.add(address + at);
        case INDIRECT_JUMP -> {
          return refuse(String.format("an indirect jump at +0x%x", at));
        }
        case JUMP -> {
          long target = (long) next + i.displacement;
          if (target < 0 || target >= code.length) {
            return refuse(String.format("a jump out of the function (tail call) at +0x%x", at));
          }
        }
        default -> { }
      }
      at = next;
    }
    if (rets.isEmpty()) {
      return refuse("no ret instruction");
    }
    return new Result(List.copyOf(rets), null);
  }

  private static Result refuse(String why) {
    return new Result(List.of(), why);
  }

  enum Kind {
    PLAIN,
    RET,
    JUMP,
    INDIRECT_JUMP
  }

  /** A decoded instruction: its length, kind and, for a direct jump, its displacement. */
  record Insn(int length, Kind kind, long displacement) {}

  /** Decodes the instruction at {@code at}; null when unknown or truncated. */
  static Insn decode(byte[] c, int at) {
    int p = at;
    boolean opsize = false;
    boolean addrsize = false;
    boolean rexW = false;
    // Legacy prefixes (at most 4 in real code; more is not what a compiler emits), then REX.
    for (int n = 0; ; n++) {
      if (p >= c.length || n > 4) {
        return null;
      }
      int b = u(c, p);
      if (b == 0x66) {
        opsize = true;
      } else if (b == 0x67) {
        addrsize = true;
      } else if (b != 0xf0 && b != 0xf2 && b != 0xf3 && b != 0x2e && b != 0x3e && b != 0x26
          && b != 0x36 && b != 0x64 && b != 0x65) {
        break;
      }
      p++;
    }
    if (u(c, p) >= 0x40 && u(c, p) <= 0x4f) {
      rexW = (u(c, p) & 8) != 0;
      p++;
    }
    if (p >= c.length) {
      return null;
    }
    int op = u(c, p++);
    int immz = opsize ? 2 : 4;
    if (op == 0x0f) {
      return twoByte(c, at, p, immz);
    }
    if (op == 0xc4 || op == 0xc5) {
      return vex(c, at, p, op);
    }
    int hi = op >> 4;
    int lo = op & 0xf;
    if (op < 0x40) {
      if (lo < 4 || lo >= 8 && lo < 0xc) {
        return modrm(c, at, p, 0, Kind.PLAIN);
      }
      if (lo == 4 || lo == 0xc) {
        return plain(at, p + 1, c);
      }
      if (lo == 5 || lo == 0xd) {
        return plain(at, p + immz, c);
      }
      return null; // invalid in 64-bit mode, or a prefix seen in the wrong place
    }
    if (hi == 5 || op >= 0x90 && op <= 0x99 && op != 0x9a || op >= 0x9b && op <= 0x9f
        || op >= 0xa4 && op <= 0xa7 || op >= 0xaa && op <= 0xaf || op >= 0x6c && op <= 0x6f
        || op == 0xc9 || op == 0xcb || op == 0xcc || op == 0xcf || op == 0xd7
        || op >= 0xec && op <= 0xef || op == 0xf1 || op == 0xf4 || op == 0xf5
        || op >= 0xf8 && op <= 0xfd) {
      return plain(at, p, c);
    }
    if (hi == 7 || op == 0xeb || op >= 0xe0 && op <= 0xe3) {
      return jump(c, at, p, 1, op == 0xeb ? Kind.JUMP : Kind.PLAIN);
    }
    if (hi == 0xb) {
      return plain(at, p + (op < 0xb8 ? 1 : rexW ? 8 : immz), c);
    }
    switch (op) {
      case 0x63, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f,
          0xd0, 0xd1, 0xd2, 0xd3, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xfe -> {
        return modrm(c, at, p, 0, Kind.PLAIN);
      }
      case 0x69, 0x81, 0xc7 -> {
        return modrm(c, at, p, immz, Kind.PLAIN);
      }
      case 0x6b, 0x80, 0x83, 0xc0, 0xc1, 0xc6 -> {
        return modrm(c, at, p, 1, Kind.PLAIN);
      }
      case 0x68 -> {
        return plain(at, p + immz, c);
      }
      case 0x6a, 0xa8, 0xcd, 0xe4, 0xe5, 0xe6, 0xe7 -> {
        return plain(at, p + 1, c);
      }
      case 0xa9 -> {
        return plain(at, p + immz, c);
      }
      case 0xa0, 0xa1, 0xa2, 0xa3 -> {
        return plain(at, p + (addrsize ? 4 : 8), c);
      }
      case 0xc2 -> {
        return p + 2 <= c.length ? new Insn(p + 2 - at, Kind.RET, 0) : null;
      }
      case 0xc3 -> {
        return new Insn(p - at, Kind.RET, 0);
      }
      case 0xc8 -> {
        return plain(at, p + 3, c);
      }
      case 0xca -> {
        return plain(at, p + 2, c);
      }
      case 0xe8 -> {
        return jump(c, at, p, 4, Kind.PLAIN); // a call returns here
      }
      case 0xe9 -> {
        return jump(c, at, p, 4, Kind.JUMP);
      }
      case 0xf6, 0xf7 -> {
        if (p >= c.length) {
          return null;
        }
        int reg = (u(c, p) >> 3) & 7;
        int imm = reg < 2 ? (op == 0xf6 ? 1 : immz) : 0;
        return modrm(c, at, p, imm, Kind.PLAIN);
      }
      case 0xff -> {
        if (p >= c.length) {
          return null;
        }
        int reg = (u(c, p) >> 3) & 7;
        return modrm(c, at, p, 0, reg == 4 || reg == 5 ? Kind.INDIRECT_JUMP : Kind.PLAIN);
      }
      default -> {
        return null; // 0x62 (EVEX), 0x82, 0x9a, 0xce, 0xd4-0xd6, 0xea and the like
      }
    }
  }

  private static Insn twoByte(byte[] c, int at, int p, int immz) {
    if (p >= c.length) {
      return null;
    }
    int op = u(c, p++);
    if (op == 0x38) {
      return p < c.length ? modrm(c, at, p + 1, 0, Kind.PLAIN) : null;
    }
    if (op == 0x3a) {
      return p < c.length ? modrm(c, at, p + 1, 1, Kind.PLAIN) : null;
    }
    if (op >= 0x80 && op <= 0x8f) {
      return jump(c, at, p, 4, Kind.JUMP); // jcc rel32
    }
    if (op == 0x05 || op == 0x06 || op == 0x07 || op == 0x08 || op == 0x09 || op == 0x0b
        || op >= 0x30 && op <= 0x35 || op == 0x37 || op == 0x77 || op == 0xa0 || op == 0xa1
        || op == 0xa2 || op == 0xa8 || op == 0xa9 || op == 0xaa || op >= 0xc8 && op <= 0xcf) {
      return plain(at, p, c);
    }
    if (op == 0x04 || op == 0x0a || op == 0x0c || op == 0x0f || op >= 0x24 && op <= 0x27
        || op == 0x36 || op == 0x39 || op >= 0x3b && op <= 0x3f || op == 0x7a || op == 0x7b
        || op == 0xff) {
      return null;
    }
    int imm = op >= 0x70 && op <= 0x73 || op == 0xa4 || op == 0xac || op == 0xba || op == 0xc2
        || op >= 0xc4 && op <= 0xc6 ? 1 : 0;
    return modrm(c, at, p, imm, Kind.PLAIN);
  }

  /** VEX (C4: three bytes, C5: two): then an opcode of map 0F, 0F38 or 0F3A and a ModRM. */
  private static Insn vex(byte[] c, int at, int p, int prefix) {
    int map = 1;
    if (prefix == 0xc4) {
      if (p >= c.length) {
        return null;
      }
      map = u(c, p) & 0x1f;
      p += 2;
    } else {
      p += 1;
    }
    if (p >= c.length || map < 1 || map > 3) {
      return null;
    }
    int op = u(c, p++);
    if (map == 1 && op == 0x77) {
      return plain(at, p, c); // vzeroupper, vzeroall
    }
    int imm = map == 3 || map == 1 && (op >= 0x70 && op <= 0x73 || op == 0xc2
        || op >= 0xc4 && op <= 0xc6) ? 1 : 0;
    return modrm(c, at, p, imm, Kind.PLAIN);
  }

  /** A ModRM at {@code p}, its SIB and displacement, then {@code imm} immediate bytes. */
  private static Insn modrm(byte[] c, int at, int p, int imm, Kind kind) {
    if (p >= c.length) {
      return null;
    }
    int m = u(c, p++);
    int mod = m >> 6;
    int rm = m & 7;
    if (mod != 3) {
      if (rm == 4) {
        if (p >= c.length) {
          return null;
        }
        int sib = u(c, p++);
        if (mod == 0 && (sib & 7) == 5) {
          p += 4;
        }
      } else if (mod == 0 && rm == 5) {
        p += 4; // rip-relative
      }
      p += mod == 1 ? 1 : mod == 2 ? 4 : 0;
    }
    p += imm;
    return p <= c.length ? new Insn(p - at, kind, 0) : null;
  }

  private static Insn jump(byte[] c, int at, int p, int size, Kind kind) {
    if (p + size > c.length) {
      return null;
    }
    long d = size == 1 ? c[p] : (c[p] & 0xff) | (c[p + 1] & 0xff) << 8 | (c[p + 2] & 0xff) << 16
        | c[p + 3] << 24;
    // A conditional jump (jcc, loop, jrcxz) is checked like a jump: it may leave, too.
    boolean conditional = kind == Kind.PLAIN && size == 1 || size == 4 && kind == Kind.JUMP;
    Kind k = kind == Kind.JUMP || conditional ? Kind.JUMP : Kind.PLAIN;
    return new Insn(p + size - at, k, d);
  }

  private static Insn plain(int at, int end, byte[] c) {
    return end <= c.length ? new Insn(end - at, Kind.PLAIN, 0) : null;
  }

  private static int u(byte[] c, int i) {
    return i < c.length ? c[i] & 0xff : -1;
  }
}
