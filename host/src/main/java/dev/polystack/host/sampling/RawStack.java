package dev.polystack.host.sampling;

import dev.polystack.host.unwind.UnwindError;
import dev.polystack.plugin.api.SampleAttributes;
import dev.polystack.plugin.api.SampleType;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A captured stack, leaf first, the reasons of every error frame in it (for counters): the
 * native walk's ({@link UnwindError#reason}) and plug-ins' ({@code <plugin id>_<reason>}), and
 * the sample attributes its walks reported, each within its plug-in's namespace, and the values
 * they measured, by the plug-in's declared sample type.
 */
public record RawStack(List<RawFrame> frames, List<String> errors, SampleAttributes attributes,
    Map<SampleType, Long> values) {
  public RawStack {
    frames = List.copyOf(frames);
    errors = List.copyOf(errors);
    Objects.requireNonNull(attributes, "attributes");
    values = Map.copyOf(values);
  }

  /** A stack without sample attributes or values. */
  public RawStack(List<RawFrame> frames, List<String> errors) {
    this(frames, errors, SampleAttributes.EMPTY, Map.of());
  }

  /** Whether the native walk ended with {@code error}. */
  public boolean endedWith(UnwindError error) {
    return errors.contains(error.reason());
  }
}
