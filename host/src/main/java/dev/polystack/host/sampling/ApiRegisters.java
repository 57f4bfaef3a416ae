package dev.polystack.host.sampling;

import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;

/** Converts the kernel's register layouts to the plug-in API's register set. */
final class ApiRegisters {
  private ApiRegisters() {}

  static Registers of(dev.polystack.host.ptrace.Registers r) {
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
}
