package dev.polystack.host.ptrace;

import jnr.ffi.Pointer;

/** x86-64 {@code struct user_regs_struct}, fields in kernel order. */
public record UserRegs(
    long r15,
    long r14,
    long r13,
    long r12,
    long rbp,
    long rbx,
    long r11,
    long r10,
    long r9,
    long r8,
    long rax,
    long rcx,
    long rdx,
    long rsi,
    long rdi,
    long origRax,
    long rip,
    long cs,
    long eflags,
    long rsp,
    long ss,
    long fsBase,
    long gsBase,
    long ds,
    long es,
    long fs,
    long gs) {

  /** sizeof(struct user_regs_struct). */
  public static final int SIZE = 27 * 8;

  static UserRegs read(Pointer p) {
    long[] v = new long[27];
    p.get(0, v, 0, 27);
    return new UserRegs(
        v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13],
        v[14], v[15], v[16], v[17], v[18], v[19], v[20], v[21], v[22], v[23], v[24], v[25], v[26]);
  }
}
