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
 * the request with no entry stays native. The sample's attributes and values go here.
 *
 * @param replacements native frame index to what replaces that frame
 * @param attributes the sample's attributes ({@link SampleAttributes})
 * @param values the sample's value per {@link SampleType#name()} of the plug-in's {@link
 *     RuntimePlugin#sampleTypes()}, each >= 0; a type not named here is 0 for this sample (since
 *     2.0)
 * @since 1.10
 */
public record SampleWalk(Map<Integer, WalkResult> replacements, SampleAttributes attributes,
    Map<String, Long> values) {
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
    TreeMap<String, Long> measured = new TreeMap<>();
    values.forEach((type, value) -> {
      Objects.requireNonNull(type, "sample type");
      if (value == null || value < 0) {
        throw new IllegalArgumentException("sample type " + type + ": a value is >= 0, not "
            + value);
      }
      measured.put(type, value);
    });
    values = Collections.unmodifiableMap(measured);
  }

  /** Replacements and attributes, no values. */
  public SampleWalk(Map<Integer, WalkResult> replacements, SampleAttributes attributes) {
    this(replacements, attributes, Map.of());
  }

  /** Replacements without sample attributes or values. */
  public SampleWalk(Map<Integer, WalkResult> replacements) {
    this(replacements, SampleAttributes.EMPTY, Map.of());
  }
}
