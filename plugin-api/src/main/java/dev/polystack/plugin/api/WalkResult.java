package dev.polystack.plugin.api;

import java.util.List;
import java.util.Objects;

/**
 * Outcome of {@link RuntimeInstance#walk}: frames, "not mine", or a failure with a reason.
 *
 * @since 1.0
 */
public sealed interface WalkResult {

  static WalkResult notMine() {
    return NotMine.INSTANCE;
  }

  /** The native frame does not belong to this instance; the host keeps it as native. */
  enum NotMine implements WalkResult {
    INSTANCE
  }

  /**
   * Runtime frames, leaf first, that replace the native frame the request named. An empty list
   * removes the native frame (e.g. a frame the plug-in already accounted for in a previous
   * segment). {@code sampleAttributes} (since 1.9) go on the sample; where several walks of one
   * sample give a key, the leaf-most walk's value is kept.
   */
  record Frames(List<Frame> frames, SampleAttributes sampleAttributes) implements WalkResult {
    public Frames {
      frames = List.copyOf(frames);
      Objects.requireNonNull(sampleAttributes, "sampleAttributes");
    }

    /** Frames without sample attributes. */
    public Frames(List<Frame> frames) {
      this(frames, SampleAttributes.EMPTY);
    }
  }

  /**
   * The walk stopped early. {@code partial} holds the frames found before the failure; the host
   * appends an error frame named {@code reason} and counts it. {@code sampleAttributes} as for
   * {@link Frames} (since 1.9).
   */
  record Failed(String reason, List<Frame> partial, SampleAttributes sampleAttributes)
      implements WalkResult {
    public Failed {
      Objects.requireNonNull(reason, "reason");
      partial = List.copyOf(partial);
      Objects.requireNonNull(sampleAttributes, "sampleAttributes");
    }

    /** A failure without sample attributes. */
    public Failed(String reason, List<Frame> partial) {
      this(reason, partial, SampleAttributes.EMPTY);
    }
  }
}
