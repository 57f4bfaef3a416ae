package dev.polystack.plugin.api;

import java.util.List;
import java.util.Objects;

/**
 * How calls of one planned function end, for backends that pair entry and return where the hit
 * happens (in the kernel) instead of handing every hit to a monitor: the function's own return
 * instructions, found by the plug-in in the image, and what to copy from the caller's memory at
 * the return. The host compiles this into its probe program; it never learns the function. At a
 * return instruction the stack pointer equals the one at entry, so the backend pairs by thread
 * and stack pointer, and hands the monitor an entry hit and a return hit as if it had stopped
 * at the caller's return address (pc = the return address, sp = entry sp + 8), with memory that
 * serves only the copied bytes.
 *
 * <p>Since API 1.2.
 *
 * @param entry the function's entry site (module virtual address, as in {@link ProbePlan#sites})
 * @param returns the function's return instructions (module virtual addresses)
 * @param outputs what to copy at the return, at most {@link #MAX_OUTPUTS}
 * @since 1.2
 */
public record ProbeExit(long entry, List<Long> returns, List<OutputCopy> outputs) {
  public static final int MAX_OUTPUTS = 2;

  public ProbeExit {
    returns = List.copyOf(returns);
    outputs = List.copyOf(outputs);
    if (returns.isEmpty()) {
      throw new IllegalArgumentException("a probe exit needs at least one return instruction");
    }
    if (outputs.size() > MAX_OUTPUTS) {
      throw new IllegalArgumentException(
          "a probe exit copies at most " + MAX_OUTPUTS + " outputs, got " + outputs.size());
    }
  }

  /**
   * Copy {@code length} bytes from the address an argument register held at entry, when it is
   * not 0. The bytes are read at the return, when the function has written them.
   *
   * @param address the argument register that holds the pointer at entry
   * @param length bytes to copy, 1..{@link #MAX_BYTES}
   */
  public record OutputCopy(Register address, int length) {
    public static final int MAX_BYTES = 64;

    public OutputCopy {
      Objects.requireNonNull(address, "address");
      if (length < 1 || length > MAX_BYTES) {
        throw new IllegalArgumentException("an output copy is 1.." + MAX_BYTES + " bytes, got "
            + length);
      }
    }
  }
}
