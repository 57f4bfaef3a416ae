package dev.polystack.host.proc;

import java.util.Objects;

/**
 * Access bits of a mapping, e.g. {@code r-xp}.
 *
 * @param raw the four characters exactly as the kernel printed them
 * @param shared {@code s} (shared) rather than {@code p} (private, copy-on-write)
 */
public record Permissions(
    String raw, boolean readable, boolean writable, boolean executable, boolean shared) {

  public Permissions {
    Objects.requireNonNull(raw, "raw");
    if (!isWellFormed(raw)
        || (raw.charAt(0) == 'r') != readable
        || (raw.charAt(1) == 'w') != writable
        || (raw.charAt(2) == 'x') != executable
        || (raw.charAt(3) == 's') != shared) {
      throw new IllegalArgumentException("inconsistent permissions: " + raw);
    }
  }

  /** Parses {@code [r-][w-][x-][ps]}; returns null when the text is not of that form. */
  static Permissions parseOrNull(String raw) {
    if (!isWellFormed(raw)) {
      return null;
    }
    return new Permissions(
        raw,
        raw.charAt(0) == 'r',
        raw.charAt(1) == 'w',
        raw.charAt(2) == 'x',
        raw.charAt(3) == 's');
  }

  private static boolean isWellFormed(String raw) {
    return raw.length() == 4
        && (raw.charAt(0) == 'r' || raw.charAt(0) == '-')
        && (raw.charAt(1) == 'w' || raw.charAt(1) == '-')
        && (raw.charAt(2) == 'x' || raw.charAt(2) == '-')
        && (raw.charAt(3) == 'p' || raw.charAt(3) == 's');
  }

  @Override
  public String toString() {
    return raw;
  }
}
