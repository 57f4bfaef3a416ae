package dev.polystack.plugin.api;

/**
 * The x86-64 System V argument registers of one call as a probe recorded them at its entry:
 * {@code rdi rsi rdx rcx r8 r9}, the first six integer or pointer arguments in declaration order.
 *
 * @since 1.7
 */
public record ArgumentRegisters(long rdi, long rsi, long rdx, long rcx, long r8, long r9) {
  /** How many arguments the registers hold. */
  public static final int COUNT = 6;

  /** From values in register order, {@code rdi} first; the array must hold {@value #COUNT}. */
  public static ArgumentRegisters of(long[] values) {
    if (values == null || values.length != COUNT) {
      throw new IllegalArgumentException("need " + COUNT + " argument registers, got "
          + (values == null ? "none" : values.length));
    }
    return new ArgumentRegisters(values[0], values[1], values[2], values[3], values[4],
        values[5]);
  }

  /** The register of argument {@code index} (0 is {@code rdi}, 5 is {@code r9}). */
  public long get(int index) {
    return switch (index) {
      case 0 -> rdi;
      case 1 -> rsi;
      case 2 -> rdx;
      case 3 -> rcx;
      case 4 -> r8;
      case 5 -> r9;
      default -> throw new IndexOutOfBoundsException("argument register " + index + " of "
          + COUNT);
    };
  }
}
