package dev.polystack.plugin.api;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One argument of a call as an {@link ArgumentDecoder} names and writes it: {@code
 * clockid=CLOCK_MONOTONIC}, {@code tp=0x7ffd2c1e9a40}.
 *
 * @param name the parameter's name as the prototype declares it, an identifier ({@code
 *     [A-Za-z_][A-Za-z0-9_]*}, at most 64 characters): the host uses it as a JSON key and in
 *     the span attribute {@code polystack.probe.arg.<name>}
 * @param value the value as text, one line of at most {@value #MAX_VALUE_LENGTH} characters:
 *     names for symbolic constants, decimal for numbers, {@code 0x} hexadecimal for addresses
 * @since 1.7
 */
public record DecodedArgument(String name, String value) {
  /** The longest value, so that one decoded call stays one readable line. */
  public static final int MAX_VALUE_LENGTH = 256;

  static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,63}");

  public DecodedArgument {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(value, "value");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("an argument's name is an identifier of at most 64"
          + " characters, got '" + name + "'");
    }
    checkText("value of " + name, value);
  }

  /** One non-blank line of at most {@link #MAX_VALUE_LENGTH} characters. */
  static void checkText(String what, String text) {
    if (text.isBlank() || text.length() > MAX_VALUE_LENGTH) {
      throw new IllegalArgumentException(what + " must be 1.." + MAX_VALUE_LENGTH
          + " characters, not blank, got " + text.length());
    }
    for (int i = 0; i < text.length(); i++) {
      if (Character.isISOControl(text.charAt(i))) {
        throw new IllegalArgumentException(what + " must be one line without control"
            + " characters");
      }
    }
  }
}
