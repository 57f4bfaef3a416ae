package dev.polystack.plugin.api;

import java.util.List;
import java.util.Objects;

/**
 * What replaces one native frame of a sample ({@link SampleWalk#replacements}): runtime frames,
 * or a failure with a reason. A native frame with no replacement stays native.
 *
 * @since 1.0; since 2.0 without {@code NotMine} and without per-result sample attributes (a
 *     sample's attributes go on its {@link SampleWalk})
 */
public sealed interface WalkResult {

  /**
   * Runtime frames, leaf first, that replace the native frame. An empty list removes the native
   * frame (e.g. a C frame of the VM that the runtime frames already stand for).
   */
  record Frames(List<Frame> frames) implements WalkResult {
    public Frames {
      frames = List.copyOf(frames);
    }
  }

  /**
   * The walk stopped early. {@code partial} holds the frames found before the failure; the host
   * appends an error frame named {@code <plug-in id>_<reason>} and counts it.
   */
  record Failed(String reason, List<Frame> partial) implements WalkResult {
    public Failed {
      Objects.requireNonNull(reason, "reason");
      partial = List.copyOf(partial);
    }
  }
}
