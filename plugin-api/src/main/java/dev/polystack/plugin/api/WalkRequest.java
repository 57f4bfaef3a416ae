package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * The host asks a runtime instance to walk the runtime frames that belong to one native frame
 * whose PC lies in the instance's code ranges. The requests of one sample follow one
 * {@link RuntimeInstance#beginSample} call, leaf-most first.
 *
 * <p>Merging happens on explicit delimiters, never on names: {@code segment} counts how many
 * native frames in this instance's ranges lie between this one and the leaf (0 for the
 * leaf-most), so a runtime with one interpreter stack per thread, entered once per C boundary,
 * can match the n-th interpreter frame to its n-th saved C frame. A runtime with several stacks
 * per thread (coroutines, each entered from its own C frames) counts entries per stack itself,
 * between two {@code beginSample} calls, since this count mixes them.
 *
 * @param thread the sampled thread
 * @param frameRegisters registers as unwound to this native frame; at callers only the
 *     callee-saved registers, RIP and RSP are meaningful
 * @param leaf whether this native frame is the innermost one (registers are exact)
 * @param segment index of this interpreter entry counting from the leaf
 * @since 1.0
 */
public record WalkRequest(
    ThreadContext thread, Registers frameRegisters, boolean leaf, int segment) {
  public WalkRequest {
    Objects.requireNonNull(thread, "thread");
    Objects.requireNonNull(frameRegisters, "frameRegisters");
    if (segment < 0) {
      throw new IllegalArgumentException("segment must be >= 0");
    }
  }
}
