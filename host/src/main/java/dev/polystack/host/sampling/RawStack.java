package dev.polystack.host.sampling;

import dev.polystack.host.unwind.UnwindError;
import java.util.List;

/**
 * A captured stack, leaf first, and the reasons of every error frame in it (for counters): the
 * native walk's ({@link UnwindError#reason}) and plug-ins' ({@code <plugin id>_<reason>}).
 */
public record RawStack(List<RawFrame> frames, List<String> errors) {
  public RawStack {
    frames = List.copyOf(frames);
    errors = List.copyOf(errors);
  }

  /** Whether the native walk ended with {@code error}. */
  public boolean endedWith(UnwindError error) {
    return errors.contains(error.reason());
  }
}
