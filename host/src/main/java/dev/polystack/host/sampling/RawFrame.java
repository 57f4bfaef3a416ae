package dev.polystack.host.sampling;

import dev.polystack.plugin.api.Frame;

/**
 * A frame as captured while the thread was stopped: native frames are still bare addresses
 * (named after the thread is resumed), runtime frames come named from their plug-in.
 */
sealed interface RawFrame {

  /** A native PC; {@code exact} for the leaf and signal-interrupted frames. */
  record Native(long pc, boolean exact) implements RawFrame {
    long lookupPc() {
      return exact ? pc : pc - 1;
    }
  }

  /** A frame a runtime plug-in produced. */
  record Runtime(Frame frame) implements RawFrame {}
}
