package dev.polystack.host.sampling;

import dev.polystack.plugin.api.Frame;

/**
 * A frame as captured while the thread was stopped: native frames are still bare addresses
 * (named after the thread is resumed), runtime frames come named from their plug-in.
 */
public sealed interface RawFrame {

  /** A native PC; {@code exact} for the leaf and signal-interrupted frames. */
  record Native(long pc, boolean exact) implements RawFrame {
    public long lookupPc() {
      return exact ? pc : pc - 1;
    }

    // Written out: the generated ones go through method handles C1 does not inline, and raw
    // stacks are hashed once per sample (SampleProcessor's cache of named stacks).
    @Override
    public boolean equals(Object o) {
      return o instanceof Native n && n.pc == pc && n.exact == exact;
    }

    @Override
    public int hashCode() {
      return Long.hashCode(pc) * 31 + (exact ? 1 : 0);
    }
  }

  /** A frame a runtime plug-in produced. */
  record Runtime(Frame frame) implements RawFrame {
    @Override
    public boolean equals(Object o) {
      return o instanceof Runtime r && r.frame.equals(frame);
    }

    @Override
    public int hashCode() {
      return frame.hashCode();
    }
  }
}
