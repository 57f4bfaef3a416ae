package dev.polystack.plugin.api;

import java.util.List;
import java.util.Objects;

/**
 * One whole sample for {@link SampleWalker#walk} (since API 1.10): the sampled thread
 * and, leaf first, every native frame of its unwind whose PC lies in this instance's code, each
 * with its position in that unwind. The plug-in reads its runtime's stacks once and says which
 * of these native frames each run of runtime frames replaces ({@link SampleWalk}).
 *
 * @param thread the sampled thread
 * @param frames this instance's native frames, leaf first; never empty
 * @since 1.10
 */
public record SampleRequest(ThreadContext thread, List<OwnedFrame> frames) {
  public SampleRequest {
    Objects.requireNonNull(thread, "thread");
    frames = List.copyOf(frames);
    if (frames.isEmpty()) {
      throw new IllegalArgumentException("a sample request names at least one native frame");
    }
    for (int i = 1; i < frames.size(); i++) {
      if (frames.get(i).nativeIndex() <= frames.get(i - 1).nativeIndex()) {
        throw new IllegalArgumentException("native frames go leaf first, each index once");
      }
    }
  }

  /**
   * One native frame in this instance's code.
   *
   * @param nativeIndex its position in the sample's native unwind, 0 for the leaf; the author
   *     kit, which has no full unwind, numbers its candidate frames instead
   * @param registers as unwound to this frame; above the leaf only the callee-saved registers,
   *     RIP and RSP are meaningful
   */
  public record OwnedFrame(int nativeIndex, Registers registers) {
    public OwnedFrame {
      if (nativeIndex < 0) {
        throw new IllegalArgumentException("nativeIndex must be >= 0");
      }
      Objects.requireNonNull(registers, "registers");
    }

    /** Whether this is the innermost native frame (its registers are exact). */
    public boolean leaf() {
      return nativeIndex == 0;
    }
  }
}
