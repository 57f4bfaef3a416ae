package dev.polystack.host.unwind;

/**
 * Evaluates the DWARF expressions CFI uses on x86-64: PLT stubs compute their CFA from RSP and
 * RIP, and signal trampolines find saved registers in the kernel's sigcontext. Bounded in steps
 * and stack depth; an unsupported operation is a {@link CfiException}.
 */
final class DwarfExpression {
  static final int MAX_STEPS = 1_000;
  static final int MAX_STACK = 64;

  /** Register values of the frame being unwound; unknown registers fail the expression. */
  interface RegisterFile {
    long get(int dwarfRegister) throws CfiException;
  }

  /** Reads a 64-bit word of target memory. */
  interface WordReader {
    long readLong(long address) throws CfiException;
  }

  private DwarfExpression() {}

  /** Evaluates {@code expression} with {@code initial} pushed first (the CFA, per DWARF 6.4.1). */
  static long evaluate(byte[] expression, boolean pushInitial, long initial, RegisterFile regs,
      WordReader memory) throws CfiException {
    long[] stack = new long[MAX_STACK];
    int sp = 0;
    if (pushInitial) {
      stack[sp++] = initial;
    }
    CfiReader in = new CfiReader(expression);
    int steps = 0;
    while (in.hasMore()) {
      if (++steps > MAX_STEPS) {
        throw new CfiException(UnwindError.DWARF_EXPR_TOO_LONG,
            "more than " + MAX_STEPS + " steps");
      }
      int op = in.u8();
      if (op >= 0x30 && op <= 0x4f) { // DW_OP_lit0..31
        sp = push(stack, sp, op - 0x30);
        continue;
      }
      if (op >= 0x70 && op <= 0x8f) { // DW_OP_breg0..31
        sp = push(stack, sp, regs.get(op - 0x70) + in.sleb());
        continue;
      }
      switch (op) {
        case 0x03 -> sp = push(stack, sp, in.u64()); // addr
        case 0x08 -> sp = push(stack, sp, in.u8()); // const1u
        case 0x09 -> sp = push(stack, sp, (byte) in.u8()); // const1s
        case 0x0a -> sp = push(stack, sp, in.u16()); // const2u
        case 0x0b -> sp = push(stack, sp, (short) in.u16()); // const2s
        case 0x0c -> sp = push(stack, sp, in.u32()); // const4u
        case 0x0d -> sp = push(stack, sp, (int) in.u32()); // const4s
        case 0x0e, 0x0f -> sp = push(stack, sp, in.u64()); // const8u/s
        case 0x10 -> sp = push(stack, sp, in.uleb()); // constu
        case 0x11 -> sp = push(stack, sp, in.sleb()); // consts
        case 0x12 -> sp = push(stack, sp, peek(stack, sp, 0)); // dup
        case 0x13 -> sp = pop(sp); // drop
        case 0x14 -> sp = push(stack, sp, peek(stack, sp, 1)); // over
        case 0x15 -> sp = push(stack, sp, peek(stack, sp, in.u8())); // pick
        case 0x16 -> { // swap
          long a = peek(stack, sp, 0);
          stack[sp - 1] = peek(stack, sp, 1);
          stack[sp - 2] = a;
        }
        case 0x17 -> { // rot
          long a = peek(stack, sp, 0);
          long b = peek(stack, sp, 1);
          long c = peek(stack, sp, 2);
          stack[sp - 1] = b;
          stack[sp - 2] = c;
          stack[sp - 3] = a;
        }
        case 0x06 -> stack[top(sp)] = memory.readLong(stack[sp - 1]); // deref
        case 0x19 -> stack[top(sp)] = Math.abs(stack[sp - 1]); // abs
        case 0x1f -> stack[top(sp)] = -stack[sp - 1]; // neg
        case 0x20 -> stack[top(sp)] = ~stack[sp - 1]; // not
        case 0x23 -> stack[top(sp)] = stack[sp - 1] + in.uleb(); // plus_uconst
        case 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x21, 0x22, 0x24, 0x25, 0x26, 0x27,
            0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e -> {
          long b = peek(stack, sp, 0);
          long a = peek(stack, sp, 1);
          sp -= 1;
          stack[sp - 1] = binary(op, a, b);
        }
        case 0x2f, 0x28 -> { // skip, bra
          int offset = (short) in.u16();
          boolean jump = true;
          if (op == 0x28) {
            jump = peek(stack, sp, 0) != 0;
            sp = pop(sp);
          }
          if (jump) {
            in.seek(in.position() + offset);
          }
        }
        case 0x92 -> { // bregx
          int reg = (int) in.uleb();
          sp = push(stack, sp, regs.get(reg) + in.sleb());
        }
        case 0x96 -> { } // nop
        default -> throw new CfiException(UnwindError.DWARF_EXPR_UNSUPPORTED,
            "DW_OP 0x" + Integer.toHexString(op));
      }
    }
    if (sp == 0) {
      throw new CfiException(UnwindError.DWARF_EXPR_EMPTY, "expression left no value");
    }
    return stack[sp - 1];
  }

  private static long binary(int op, long a, long b) throws CfiException {
    return switch (op) {
      case 0x1a -> a & b;
      case 0x1b -> {
        if (b == 0) {
          throw new CfiException(UnwindError.DWARF_EXPR_DIV_ZERO, "division by zero");
        }
        yield a / b;
      }
      case 0x1c -> a - b;
      case 0x1d -> {
        if (b == 0) {
          throw new CfiException(UnwindError.DWARF_EXPR_DIV_ZERO, "modulo by zero");
        }
        yield Long.remainderUnsigned(a, b);
      }
      case 0x1e -> a * b;
      case 0x21 -> a | b;
      case 0x22 -> a + b;
      case 0x24 -> b >= 64 || b < 0 ? 0 : a << b;
      case 0x25 -> b >= 64 || b < 0 ? 0 : a >>> b;
      case 0x26 -> b >= 64 || b < 0 ? (a < 0 ? -1 : 0) : a >> b;
      case 0x27 -> a ^ b;
      case 0x29 -> a == b ? 1 : 0;
      case 0x2a -> a >= b ? 1 : 0;
      case 0x2b -> a > b ? 1 : 0;
      case 0x2c -> a <= b ? 1 : 0;
      case 0x2d -> a < b ? 1 : 0;
      case 0x2e -> a != b ? 1 : 0;
      default -> throw new CfiException(UnwindError.DWARF_EXPR_UNSUPPORTED, "binary op " + op);
    };
  }

  private static int push(long[] stack, int sp, long value) throws CfiException {
    if (sp == stack.length) {
      throw new CfiException(UnwindError.DWARF_EXPR_OVERFLOW, "stack deeper than " + MAX_STACK);
    }
    stack[sp] = value;
    return sp + 1;
  }

  private static long peek(long[] stack, int sp, int depth) throws CfiException {
    if (depth < 0 || depth >= sp) {
      throw new CfiException(UnwindError.DWARF_EXPR_UNDERFLOW, "stack has " + sp + " values");
    }
    return stack[sp - 1 - depth];
  }

  private static int top(int sp) throws CfiException {
    if (sp == 0) {
      throw new CfiException(UnwindError.DWARF_EXPR_UNDERFLOW, "empty stack");
    }
    return sp - 1;
  }

  private static int pop(int sp) throws CfiException {
    return top(sp);
  }
}
