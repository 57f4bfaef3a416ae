package dev.polystack.plugin.api;

/**
 * x86-64 general registers, numbered as DWARF numbers them (System V psABI, table 3.36).
 *
 * @since 1.0
 */
public enum Register {
  RAX(0), RDX(1), RCX(2), RBX(3), RSI(4), RDI(5), RBP(6), RSP(7),
  R8(8), R9(9), R10(10), R11(11), R12(12), R13(13), R14(14), R15(15),
  RIP(16);

  /** values() copies its array on every call; the unwinder asks once per CFI rule. */
  private static final Register[] BY_DWARF = values();

  private final int dwarfNumber;

  Register(int dwarfNumber) {
    this.dwarfNumber = dwarfNumber;
  }

  public int dwarfNumber() {
    return dwarfNumber;
  }

  /** The register with this DWARF number, or null if it is not a general register. */
  public static Register fromDwarf(int number) {
    return number >= 0 && number < BY_DWARF.length ? BY_DWARF[number] : null;
  }
}
