package dev.polystack.host.cli;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * Parses durations as users write them: {@code 500ms}, {@code 10s}, {@code 2m}, {@code 1h}; a bare
 * number is seconds, as py-spy's {@code --duration 10} and {@code timeout 10} read it.
 */
final class Durations implements CommandLine.ITypeConverter<java.time.Duration> {
  private static final Pattern FORMAT = Pattern.compile("(\\d{1,9})(ms|s|m|h)?");

  @Override
  public java.time.Duration convert(String value) {
    return parse(value);
  }

  static java.time.Duration parse(String value) {
    Matcher m = FORMAT.matcher(value.trim());
    if (!m.matches()) {
      throw new CommandLine.TypeConversionException("'" + value + "' is not a duration: write"
          + " a whole number of seconds, or with ms, s, m or h, e.g. 500ms, 10s, 2m");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "s" : m.group(2);
    java.time.Duration d = switch (unit) {
      case "ms" -> java.time.Duration.ofMillis(n);
      case "s" -> java.time.Duration.ofSeconds(n);
      case "m" -> java.time.Duration.ofMinutes(n);
      default -> java.time.Duration.ofHours(n);
    };
    if (d.isZero()) {
      throw new CommandLine.TypeConversionException("'" + value + "': a duration must be > 0");
    }
    return d;
  }
}
