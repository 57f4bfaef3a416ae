package dev.polystack.host.unwind;

import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.RemoteMemory;
import java.util.ArrayList;
import java.util.List;

/**
 * Walks native frames with DWARF CFI from .eh_frame/.debug_frame, falling back to the frame
 * pointer where a PC has no CFI (JIT code, hand-written assembly). It never throws for bad target
 * data: the walk ends with a reason that becomes an error frame and a counter.
 */
public final class NativeUnwinder {

  /** Finds the module that contains a runtime PC, or null. */
  public interface ModuleLookup {
    UnwindModule find(long pc);
  }

  /**
   * Unwinds a frame of code without CFI on behalf of whoever generated it (a JIT): the caller's
   * registers, or null.
   */
  public interface CallerStep {
    Registers callerOf(Registers frame);

    /**
     * Whether the generator of this code wants to unwind it itself even where CFI exists (an
     * interpreter whose helpers are entered without a prologue, so the CFI is off there).
     */
    default boolean owns(long pc) {
      return false;
    }
  }

  /** Stacks are at most this far apart from one frame to the next (8 MiB default ulimit). */
  static final long MAX_FRAME_SIZE = 8L << 20;

  private static final int DWARF_RA = 16;
  private static final int DWARF_RSP = 7;

  /** Callee-saved registers keep their value in callers unless the CFI says otherwise. */
  private static final int CALLEE_SAVED_MASK = bit(Register.RBX) | bit(Register.RBP)
      | bit(Register.R12) | bit(Register.R13) | bit(Register.R14) | bit(Register.R15);

  private static final Register[] REGISTERS = Register.values();
  private static final int ALL_KNOWN = (1 << REGISTERS.length) - 1;

  private final int maxDepth;

  public NativeUnwinder(int maxDepth) {
    if (maxDepth < 1 || maxDepth > 65_536) {
      throw new IllegalArgumentException("max depth must be 1..65536, got " + maxDepth);
    }
    this.maxDepth = maxDepth;
  }

  public UnwindResult unwind(Registers leaf, RemoteMemory memory, ModuleLookup modules) {
    return unwind(leaf, memory, modules, frame -> null);
  }

  public UnwindResult unwind(Registers leaf, RemoteMemory memory, ModuleLookup modules,
      CallerStep jit) {
    List<NativeFrame> frames = new ArrayList<>();
    long[] regs = new long[REGISTERS.length];
    for (Register r : REGISTERS) {
      regs[r.ordinal()] = leaf.get(r);
    }
    int known = ALL_KNOWN;
    boolean exact = true;
    boolean viaFp = false;
    while (true) {
      long pc = regs[Register.RIP.ordinal()];
      frames.add(new NativeFrame(pc, Registers.of(regs), known, exact, viaFp));
      if (frames.size() >= maxDepth) {
        return new UnwindResult(frames, UnwindError.MAX_DEPTH);
      }
      UnwindModule module = modules.find(pc);
      long lookupPc = exact ? pc : pc - 1;
      UnwindRow row = null;
      UnwindError cfiFailure = UnwindError.NO_MODULE;
      if (module != null) {
        try {
          row = module.row(lookupPc - module.bias());
        } catch (CfiException e) {
          cfiFailure = e.error();
        }
      }
      long sp = regs[Register.RSP.ordinal()];
      Step jitStep = (row == null && module == null) || jit.owns(pc)
          ? jitCaller(jit, regs, known) : null;
      try {
        if (jitStep != null) {
          // The code's generator knows better than the CFI (or there is none): use its step.
          regs = jitStep.regs;
          known = jitStep.known;
          exact = true;
          viaFp = false;
        } else if (row != null) {
          Step step = stepWithCfi(row, regs, known, memory);
          if (step == null) {
            return new UnwindResult(frames, null); // outermost frame: RA undefined
          }
          if (!step.signalFrame && Long.compareUnsigned(step.regs[Register.RSP.ordinal()], sp) <= 0) {
            return new UnwindResult(frames, UnwindError.STACK_NOT_GROWING);
          }
          regs = step.regs;
          known = step.known;
          exact = step.signalFrame;
          viaFp = false;
        } else {
          long[] next = stepWithFramePointer(regs, known, memory);
          if (next == null) {
            return new UnwindResult(frames, cfiFailure);
          }
          regs = next;
          known = CALLEE_SAVED_MASK & known | bit(Register.RIP) | bit(Register.RSP);
          exact = false;
          viaFp = true;
        }
      } catch (CfiException e) {
        return new UnwindResult(frames, e.error());
      }
      long next = regs[Register.RIP.ordinal()];
      if (next == 0) {
        return new UnwindResult(frames, null); // a zero return address ends some thread stacks
      }
    }
  }

  private record Step(long[] regs, int known, boolean signalFrame) {}

  private static Step jitCaller(CallerStep jit, long[] regs, int known) {
    Registers caller = jit.callerOf(Registers.of(regs));
    if (caller == null) {
      return null;
    }
    long[] next = new long[regs.length];
    for (Register r : REGISTERS) {
      next[r.ordinal()] = caller.get(r);
    }
    if (Long.compareUnsigned(next[Register.RSP.ordinal()], regs[Register.RSP.ordinal()]) <= 0) {
      return null; // a caller must live higher on the stack
    }
    return new Step(next, CALLEE_SAVED_MASK & known | bit(Register.RIP) | bit(Register.RSP),
        false);
  }

  private static Step stepWithCfi(UnwindRow row, long[] regs, int known, RemoteMemory memory)
      throws CfiException {
    // No lambdas or boxed values for the common rules (register+offset CFA, saved at CFA+n):
    // this runs for every frame of every sample. Expressions get their reader when they occur.
    long cfa;
    if (row.cfa() instanceof CfaRule.RegisterOffset r) {
      cfa = registerValue(regs, known, r.register()) + r.offset();
    } else {
      cfa = DwarfExpression.evaluate(((CfaRule.Expression) row.cfa()).expression(), false, 0,
          registerFile(regs, known), words(memory));
    }
    RegisterRule raRule = row.rule(DWARF_RA);
    if (raRule instanceof RegisterRule.Undefined) {
      return null;
    }
    long[] next = new long[regs.length];
    int nextKnown = 0;
    for (int dwarf = 0; dwarf < UnwindRow.REGISTERS; dwarf++) {
      Register target = Register.fromDwarf(dwarf);
      int targetBit = bit(target);
      if (dwarf == DWARF_RSP && !row.hasRule(DWARF_RSP)) {
        next[target.ordinal()] = cfa; // the caller's RSP is the CFA by definition on x86-64
        nextKnown |= targetBit;
        continue;
      }
      boolean defaultSame = !row.hasRule(dwarf);
      if (defaultSame && dwarf != DWARF_RA && (CALLEE_SAVED_MASK & targetBit) == 0) {
        continue; // caller-saved: unknown in the caller
      }
      RegisterRule rule = row.rule(dwarf);
      long value;
      if (rule instanceof RegisterRule.Undefined) {
        continue;
      } else if (rule instanceof RegisterRule.SameValue) {
        if ((known & targetBit) == 0) {
          continue;
        }
        value = regs[target.ordinal()];
      } else if (rule instanceof RegisterRule.Offset o) {
        value = readWord(memory, cfa + o.offset());
      } else if (rule instanceof RegisterRule.ValOffset o) {
        value = cfa + o.offset();
      } else if (rule instanceof RegisterRule.InRegister r) {
        value = registerValue(regs, known, r.register());
      } else if (rule instanceof RegisterRule.Expression e) {
        value = readWord(memory, DwarfExpression.evaluate(e.expression(), true, cfa,
            registerFile(regs, known), words(memory)));
      } else {
        RegisterRule.ValExpression e = (RegisterRule.ValExpression) rule;
        value = DwarfExpression.evaluate(e.expression(), true, cfa, registerFile(regs, known),
            words(memory));
      }
      next[target.ordinal()] = value;
      nextKnown |= targetBit;
    }
    if ((nextKnown & bit(Register.RIP)) == 0) {
      throw new CfiException(UnwindError.CFI_NO_RETURN_ADDRESS,
          "return address rule gives no value");
    }
    return new Step(next, nextKnown, row.signalFrame());
  }

  /** A register's value in this frame; unknown or not a register is a CFI error. */
  private static long registerValue(long[] regs, int known, int dwarf) throws CfiException {
    Register r = Register.fromDwarf(dwarf);
    if (r == null || (known & bit(r)) == 0) {
      throw new CfiException(UnwindError.CFI_UNKNOWN_REGISTER,
          "DWARF register " + dwarf + " unknown");
    }
    return regs[r.ordinal()];
  }

  private static DwarfExpression.RegisterFile registerFile(long[] regs, int known) {
    return dwarf -> registerValue(regs, known, dwarf);
  }

  private static DwarfExpression.WordReader words(RemoteMemory memory) {
    return address -> readWord(memory, address);
  }

  /**
   * The classic frame chain: [rbp] is the caller's rbp and [rbp+8] the return address. Accepted
   * only when rbp points a little above the stack pointer, so garbage in rbp (code built without
   * frame pointers) ends the walk instead of wandering.
   */
  private static long[] stepWithFramePointer(long[] regs, int known, RemoteMemory memory) {
    if ((known & bit(Register.RBP)) == 0) {
      return null;
    }
    long rbp = regs[Register.RBP.ordinal()];
    long sp = regs[Register.RSP.ordinal()];
    if ((rbp & 7) != 0 || Long.compareUnsigned(rbp, sp) < 0 || rbp - sp > MAX_FRAME_SIZE) {
      return null;
    }
    try {
      long callerRbp = memory.readLong(rbp);
      long ra = memory.readLong(rbp + 8);
      long[] next = regs.clone();
      next[Register.RBP.ordinal()] = callerRbp;
      next[Register.RSP.ordinal()] = rbp + 16;
      next[Register.RIP.ordinal()] = ra;
      return next;
    } catch (MemoryReadException e) {
      return null;
    }
  }

  private static long readWord(RemoteMemory memory, long address) throws CfiException {
    try {
      return memory.readLong(address);
    } catch (MemoryReadException e) {
      throw new CfiException(UnwindError.STACK_READ_FAILED, e.getMessage());
    }
  }

  private static int bit(Register r) {
    return 1 << r.ordinal();
  }
}
