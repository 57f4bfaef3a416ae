package dev.polystack.host.sampling;

import dev.polystack.host.perf.PerfConstants;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;

/** Converts the kernel's register layouts to the plug-in API's register set. */
public final class RegisterConversion {
  private RegisterConversion() {}

  public static Registers of(dev.polystack.host.ptrace.UserRegs r) {
    long[] v = new long[Register.values().length];
    v[Register.RAX.ordinal()] = r.rax();
    v[Register.RDX.ordinal()] = r.rdx();
    v[Register.RCX.ordinal()] = r.rcx();
    v[Register.RBX.ordinal()] = r.rbx();
    v[Register.RSI.ordinal()] = r.rsi();
    v[Register.RDI.ordinal()] = r.rdi();
    v[Register.RBP.ordinal()] = r.rbp();
    v[Register.RSP.ordinal()] = r.rsp();
    v[Register.R8.ordinal()] = r.r8();
    v[Register.R9.ordinal()] = r.r9();
    v[Register.R10.ordinal()] = r.r10();
    v[Register.R11.ordinal()] = r.r11();
    v[Register.R12.ordinal()] = r.r12();
    v[Register.R13.ordinal()] = r.r13();
    v[Register.R14.ordinal()] = r.r14();
    v[Register.R15.ordinal()] = r.r15();
    v[Register.RIP.ordinal()] = r.rip();
    return Registers.of(v);
  }

  /** perf register numbers (asm/perf_regs.h) indexed by perf number. */
  private static final Register[] BY_PERF_INDEX = new Register[24];

  static {
    Register[] low = {Register.RAX, Register.RBX, Register.RCX, Register.RDX, Register.RSI,
        Register.RDI, Register.RBP, Register.RSP, Register.RIP};
    System.arraycopy(low, 0, BY_PERF_INDEX, 0, low.length);
    Register[] high = {Register.R8, Register.R9, Register.R10, Register.R11, Register.R12,
        Register.R13, Register.R14, Register.R15};
    System.arraycopy(high, 0, BY_PERF_INDEX, PerfConstants.REG_R8, high.length);
  }

  /**
   * Registers from a perf sample: {@code values} holds one value per set bit of {@code mask}, in
   * bit order (the kernel's layout for PERF_SAMPLE_REGS_USER). Bits without a general register
   * (FLAGS, segments) are skipped; registers not in the mask read as 0.
   */
  public static Registers fromPerf(long[] values, long mask) {
    long[] v = new long[Register.values().length];
    int next = 0;
    for (int bit = 0; bit < 64 && next < values.length; bit++) {
      if ((mask & (1L << bit)) == 0) {
        continue;
      }
      Register r = bit < BY_PERF_INDEX.length ? BY_PERF_INDEX[bit] : null;
      if (r != null) {
        v[r.ordinal()] = values[next];
      }
      next++;
    }
    return Registers.of(v);
  }
}
