package dev.polystack.host.unwind;

import dev.polystack.plugin.api.Registers;

/**
 * One native frame found by the unwinder.
 *
 * @param pc the frame's PC: exact for the leaf and for frames interrupted by a signal, the
 *     return address otherwise
 * @param registers register values at this frame; see {@code knownMask}
 * @param knownMask bit i set when the register with ordinal i of
 *     {@link dev.polystack.plugin.api.Register} is known at this frame
 * @param exactPc whether {@code pc} is exact (leaf, signal-interrupted) rather than a return
 *     address; symbolization looks up {@code pc - 1} for return addresses
 * @param viaFramePointer whether this frame was reached through the frame-pointer fallback
 */
public record NativeFrame(
    long pc, Registers registers, int knownMask, boolean exactPc, boolean viaFramePointer) {

  /** The address to symbolize: inside the call instruction for return addresses. */
  public long lookupPc() {
    return exactPc ? pc : pc - 1;
  }
}
