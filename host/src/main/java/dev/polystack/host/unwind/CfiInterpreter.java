package dev.polystack.host.unwind;

import dev.polystack.host.elf.Cie;
import dev.polystack.host.elf.Fde;
import dev.polystack.host.elf.PointerEncoding;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Runs the DW_CFA program of a CIE and FDE up to a PC and returns the row in force there
 * (DWARF 5 section 6.4.2, x86-64 register numbering). Bounded: programs longer than
 * {@link #MAX_INSTRUCTIONS} or deeper remember-state nesting than {@link #MAX_STATE_DEPTH} fail.
 */
final class CfiInterpreter {
  static final int MAX_INSTRUCTIONS = 100_000;
  static final int MAX_STATE_DEPTH = 64;

  private CfiInterpreter() {}

  /** The row for {@code pc} (a link-time address inside the FDE). */
  static UnwindRow rowFor(Fde fde, long pc) throws CfiException {
    Cie cie = fde.cie();
    State initial = new State();
    run(cie, new CfiReader(cie.initialInstructions()), initial, null, Long.MAX_VALUE, 0);
    State state = initial.copy();
    run(cie, new CfiReader(fde.instructions()), state, initial, pc, fde.pcBegin());
    if (state.cfa == null) {
      throw new CfiException(UnwindError.CFI_NO_CFA, "no CFA rule at 0x" + Long.toHexString(pc));
    }
    return new UnwindRow(state.cfa, state.rules, cie.signalFrame());
  }

  /** Mutable row under construction. */
  private static final class State {
    CfaRule cfa;
    RegisterRule[] rules = new RegisterRule[UnwindRow.REGISTERS];

    State copy() {
      State s = new State();
      s.cfa = cfa;
      s.rules = rules.clone();
      return s;
    }
  }

  private static void run(Cie cie, CfiReader in, State state, State initial, long targetPc,
      long startLoc) throws CfiException {
    long loc = startLoc;
    long codeAlign = cie.codeAlignmentFactor();
    long dataAlign = cie.dataAlignmentFactor();
    Deque<State> remembered = new ArrayDeque<>();
    int steps = 0;
    while (in.hasMore()) {
      if (++steps > MAX_INSTRUCTIONS) {
        throw new CfiException(UnwindError.CFI_TOO_LONG,
            "more than " + MAX_INSTRUCTIONS + " instructions");
      }
      int op = in.u8();
      int high = op & 0xc0;
      int low = op & 0x3f;
      if (high == 0x40) { // DW_CFA_advance_loc
        loc += low * codeAlign;
        if (Long.compareUnsigned(loc, targetPc) > 0) {
          return;
        }
        continue;
      }
      if (high == 0x80) { // DW_CFA_offset
        set(state, reg(low), new RegisterRule.Offset(in.uleb() * dataAlign));
        continue;
      }
      if (high == 0xc0) { // DW_CFA_restore
        restore(state, initial, reg(low));
        continue;
      }
      switch (op) {
        case 0x00 -> { } // nop
        case 0x01 -> { // set_loc
          loc = readAddress(in, cie.fdeEncoding());
          if (Long.compareUnsigned(loc, targetPc) > 0) {
            return;
          }
        }
        case 0x02, 0x03, 0x04 -> { // advance_loc1/2/4
          long delta = op == 0x02 ? in.u8() : op == 0x03 ? in.u16() : in.u32();
          loc += delta * codeAlign;
          if (Long.compareUnsigned(loc, targetPc) > 0) {
            return;
          }
        }
        case 0x05 -> set(state, reg(in.uleb()), new RegisterRule.Offset(in.uleb() * dataAlign));
        case 0x06 -> restore(state, initial, reg(in.uleb()));
        case 0x07 -> set(state, reg(in.uleb()), RegisterRule.UNDEFINED);
        case 0x08 -> set(state, reg(in.uleb()), RegisterRule.SAME_VALUE);
        case 0x09 -> set(state, reg(in.uleb()), new RegisterRule.InRegister(reg(in.uleb())));
        case 0x0a -> { // remember_state
          if (remembered.size() == MAX_STATE_DEPTH) {
            throw new CfiException(UnwindError.CFI_STATE_OVERFLOW,
                "remember_state nested too deep");
          }
          remembered.push(state.copy());
        }
        case 0x0b -> { // restore_state: the whole row, CFA included, returns to the saved one
          if (remembered.isEmpty()) {
            throw new CfiException(UnwindError.CFI_STATE_UNDERFLOW,
                "restore_state without remember_state");
          }
          State saved = remembered.pop();
          state.cfa = saved.cfa;
          state.rules = saved.rules;
        }
        case 0x0c -> state.cfa = new CfaRule.RegisterOffset(reg(in.uleb()), in.uleb());
        case 0x0d -> state.cfa = new CfaRule.RegisterOffset(reg(in.uleb()), cfaOffset(state));
        case 0x0e -> state.cfa = new CfaRule.RegisterOffset(cfaRegister(state), in.uleb());
        case 0x0f -> state.cfa = new CfaRule.Expression(in.block());
        case 0x10 -> set(state, reg(in.uleb()), new RegisterRule.Expression(in.block()));
        case 0x11 -> set(state, reg(in.uleb()), new RegisterRule.Offset(in.sleb() * dataAlign));
        case 0x12 -> state.cfa = new CfaRule.RegisterOffset(reg(in.uleb()), in.sleb() * dataAlign);
        case 0x13 -> state.cfa = new CfaRule.RegisterOffset(cfaRegister(state), in.sleb() * dataAlign);
        case 0x14 -> set(state, reg(in.uleb()), new RegisterRule.ValOffset(in.uleb() * dataAlign));
        case 0x15 -> set(state, reg(in.uleb()), new RegisterRule.ValOffset(in.sleb() * dataAlign));
        case 0x16 -> set(state, reg(in.uleb()), new RegisterRule.ValExpression(in.block()));
        case 0x2e -> in.uleb(); // GNU_args_size: only matters for exception handling
        case 0x2f -> set(state, reg(in.uleb()), new RegisterRule.Offset(-in.uleb() * dataAlign));
        default -> throw new CfiException(UnwindError.CFI_BAD_OPCODE,
            "unknown DW_CFA opcode 0x" + Integer.toHexString(op));
      }
    }
  }

  /**
   * Registers above 16 (vector and x87 registers) do not matter for unwinding general registers;
   * their rules are parsed and dropped by mapping them to -1.
   */
  private static int reg(long dwarf) {
    return dwarf >= 0 && dwarf < UnwindRow.REGISTERS ? (int) dwarf : -1;
  }

  private static void set(State state, int register, RegisterRule rule) {
    if (register >= 0) {
      state.rules[register] = rule;
    }
  }

  private static void restore(State state, State initial, int register) throws CfiException {
    if (initial == null) {
      throw new CfiException(UnwindError.CFI_BAD_RESTORE, "DW_CFA_restore in a CIE");
    }
    if (register >= 0) {
      state.rules[register] = initial.rules[register];
    }
  }

  private static long cfaOffset(State state) throws CfiException {
    if (state.cfa instanceof CfaRule.RegisterOffset r) {
      return r.offset();
    }
    throw new CfiException(UnwindError.CFI_BAD_CFA, "CFA register change without a register CFA");
  }

  private static int cfaRegister(State state) throws CfiException {
    if (state.cfa instanceof CfaRule.RegisterOffset r) {
      return r.register();
    }
    throw new CfiException(UnwindError.CFI_BAD_CFA, "CFA offset change without a register CFA");
  }

  private static long readAddress(CfiReader in, int encoding) throws CfiException {
    if ((encoding & 0x70) != 0) {
      throw new CfiException(UnwindError.CFI_BAD_SET_LOC, "relative DW_CFA_set_loc encoding 0x"
          + Integer.toHexString(encoding));
    }
    return switch (encoding & 0x0f) {
      case PointerEncoding.ABSPTR, PointerEncoding.UDATA8, PointerEncoding.SDATA8 -> in.u64();
      case PointerEncoding.UDATA4 -> in.u32();
      case PointerEncoding.SDATA4 -> (int) in.u32();
      case PointerEncoding.UDATA2 -> in.u16();
      default -> throw new CfiException(UnwindError.CFI_BAD_SET_LOC,
          "DW_CFA_set_loc encoding 0x" + Integer.toHexString(encoding));
    };
  }
}
