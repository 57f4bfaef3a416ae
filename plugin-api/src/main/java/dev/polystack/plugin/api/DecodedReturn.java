package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * A call's return value as an {@link ArgumentDecoder} reads it from the return register under
 * the function's prototype and error convention.
 *
 * @param value the value as text, one line of at most {@value DecodedArgument#MAX_VALUE_LENGTH}
 *     characters ({@code 0}, {@code 1733567890}, {@code -EINVAL} for a function that returns a
 *     negative errno, {@code -1} for a libc wrapper that sets {@code errno})
 * @param failed whether the value reports a failure by the function's convention
 * @param errorName the error's name when the return register says which it is ({@code EINVAL});
 *     null on success, and for a failure whose reason is elsewhere (a libc wrapper's {@code
 *     errno} lives in the thread's memory, which the probe did not record)
 * @since 1.7
 */
public record DecodedReturn(String value, boolean failed, String errorName) {
  public DecodedReturn {
    Objects.requireNonNull(value, "value");
    DecodedArgument.checkText("return value", value);
    if (errorName != null) {
      if (!failed) {
        throw new IllegalArgumentException("a successful return has no error name, got "
            + errorName);
      }
      if (!DecodedArgument.NAME.matcher(errorName).matches()) {
        throw new IllegalArgumentException("an error name is an identifier of at most 64"
            + " characters, got '" + errorName + "'");
      }
    }
  }

  /** A return that reports success (or a function with no failure convention). */
  public static DecodedReturn success(String value) {
    return new DecodedReturn(value, false, null);
  }

  /** A return that reports a failure; {@code errorName} null when the registers do not say. */
  public static DecodedReturn failure(String value, String errorName) {
    return new DecodedReturn(value, true, errorName);
  }
}
