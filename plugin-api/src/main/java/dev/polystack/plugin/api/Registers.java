package dev.polystack.plugin.api;

import java.util.Arrays;
import java.util.Objects;

/**
 * An immutable set of x86-64 general register values captured from one thread.
 *
 * @since 1.0
 */
public final class Registers {
  private static final int COUNT = Register.values().length;

  private final long[] values;

  private Registers(long[] values) {
    this.values = values;
  }

  /** Values indexed by {@link Register#ordinal()}; the array is copied. */
  public static Registers of(long[] valuesByOrdinal) {
    Objects.requireNonNull(valuesByOrdinal, "valuesByOrdinal");
    if (valuesByOrdinal.length != COUNT) {
      throw new IllegalArgumentException(
          "need " + COUNT + " register values, got " + valuesByOrdinal.length);
    }
    return new Registers(valuesByOrdinal.clone());
  }

  public long get(Register register) {
    return values[register.ordinal()];
  }

  public long pc() {
    return values[Register.RIP.ordinal()];
  }

  public long sp() {
    return values[Register.RSP.ordinal()];
  }

  /** A copy with one register changed, for unwinders that compute caller frames. */
  public Registers with(Register register, long value) {
    long[] copy = values.clone();
    copy[register.ordinal()] = value;
    return new Registers(copy);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Registers other && Arrays.equals(values, other.values);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(values);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("Registers{");
    for (Register r : Register.values()) {
      sb.append(r.name().toLowerCase(java.util.Locale.ROOT)).append("=0x")
          .append(Long.toHexString(values[r.ordinal()]));
      if (r != Register.RIP) {
        sb.append(", ");
      }
    }
    return sb.append('}').toString();
  }
}
