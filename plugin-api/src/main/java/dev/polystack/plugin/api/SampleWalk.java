package dev.polystack.plugin.api;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What {@link SampleWalker#walk} found in one sample (since API 1.10): for each native
 * frame it replaces, by {@link SampleRequest.OwnedFrame#nativeIndex}, a {@link
 * WalkResult.Frames} (the runtime frames in its place, leaf first; an empty list removes it) or
 * a {@link WalkResult.Failed} (the frames found, then the host's error frame); a native frame of
 * the request with no entry stays native. The sample's attributes go here, not in the entries.
 *
 * @param replacements native frame index to what replaces that frame
 * @param attributes the sample's attributes ({@link SampleAttributes})
 * @since 1.10
 */
public record SampleWalk(Map<Integer, WalkResult> replacements, SampleAttributes attributes) {
  /** Nothing replaced, no attributes: every native frame stays. */
  public static final SampleWalk NONE = new SampleWalk(Map.of(), SampleAttributes.EMPTY);

  public SampleWalk {
    TreeMap<Integer, WalkResult> copy = new TreeMap<>();
    replacements.forEach((index, result) -> {
      Objects.requireNonNull(index, "native frame index");
      if (index < 0) {
        throw new IllegalArgumentException("native frame index must be >= 0: " + index);
      }
      if (!(result instanceof WalkResult.Frames || result instanceof WalkResult.Failed)) {
        throw new IllegalArgumentException("native frame " + index + ": a replacement is"
            + " WalkResult.Frames or WalkResult.Failed, not " + result);
      }
      copy.put(index, result);
    });
    replacements = Collections.unmodifiableMap(copy);
    Objects.requireNonNull(attributes, "attributes");
  }

  /** Replacements without sample attributes. */
  public SampleWalk(Map<Integer, WalkResult> replacements) {
    this(replacements, SampleAttributes.EMPTY);
  }
}
