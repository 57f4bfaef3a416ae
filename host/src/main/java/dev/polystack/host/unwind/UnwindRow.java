package dev.polystack.host.unwind;

import java.util.Arrays;

/**
 * One row of the CFI table: the CFA rule and a rule per DWARF register (0..16 on x86-64; 16 is
 * the return address column). Immutable once built; rows are cached per PC.
 */
final class UnwindRow {
  static final int REGISTERS = 17;

  private final CfaRule cfa;
  private final RegisterRule[] rules;
  private final boolean signalFrame;

  UnwindRow(CfaRule cfa, RegisterRule[] rules, boolean signalFrame) {
    if (rules.length != REGISTERS) {
      throw new IllegalArgumentException("need " + REGISTERS + " register rules");
    }
    this.cfa = cfa;
    this.rules = rules.clone();
    this.signalFrame = signalFrame;
  }

  CfaRule cfa() {
    return cfa;
  }

  /** The rule for a DWARF register; registers without a rule keep their value (same value). */
  RegisterRule rule(int dwarfRegister) {
    RegisterRule r = rules[dwarfRegister];
    return r == null ? RegisterRule.SAME_VALUE : r;
  }

  /** Whether a rule was stated for the register (versus the default). */
  boolean hasRule(int dwarfRegister) {
    return rules[dwarfRegister] != null;
  }

  /** The frame is a signal trampoline ('S' augmentation): its PC is exact, not a return address. */
  boolean signalFrame() {
    return signalFrame;
  }

  @Override
  public String toString() {
    return "UnwindRow{cfa=" + cfa + ", rules=" + Arrays.toString(rules) + ", signal=" + signalFrame
        + "}";
  }
}
