package dev.polystack.host.cli;

/**
 * Text from a target (thread names, comm, frame and file names, paths) made safe to print: every
 * C0 control character, DEL and C1 control character becomes a visible {@code \x1b}-style
 * escape, so a target cannot move the cursor, recolour or retitle the user's terminal, or forge
 * lines of polystack's output; Unicode bidirectional controls and zero-width characters become
 * {@code \u202e}-style escapes, so a name cannot reorder or hide what the line shows. The one place all printers go through: {@link Console} applies
 * {@link #escapeKeepingLayout} to everything it prints, and printers apply {@link #escape} to
 * each target-derived field so that newlines and tabs inside a field are escaped too.
 */
public final class TerminalText {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private TerminalText() {}

  /** {@code s} with every control character escaped, newline and tab included: one field. */
  public static String escape(String s) {
    return escape(s, false);
  }

  /** {@code s} with every control character but newline and tab escaped: laid-out text. */
  static String escapeKeepingLayout(String s) {
    return escape(s, true);
  }

  static boolean isControl(char c) {
    return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || isInvisibleFormat(c);
  }

  /**
   * Bidi embeddings and overrides (U+202A..U+202E), isolates (U+2066..U+2069), marks (U+200E,
   * U+200F, U+061C) and zero-width characters (U+200B..U+200D, U+2060, U+FEFF): they print
   * nothing of their own but reorder or hide what follows them.
   */
  static boolean isInvisibleFormat(char c) {
    return (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)
        || (c >= 0x200b && c <= 0x200f) || c == 0x061c || c == 0x2060 || c == 0xfeff;
  }

  /** Whether {@code c} is a control character {@code escapeKeepingLayout} escapes. */
  static boolean escapedInLayout(char c) {
    return isControl(c) && c != '\n' && c != '\t';
  }

  private static String escape(String s, boolean keepLayout) {
    if (s == null) {
      return "";
    }
    int first = firstEscaped(s, keepLayout);
    if (first < 0) {
      return s;
    }
    StringBuilder sb = new StringBuilder(s.length() + 16).append(s, 0, first);
    for (int i = first; i < s.length(); i++) {
      char c = s.charAt(i);
      if (keepLayout ? escapedInLayout(c) : isControl(c)) {
        appendEscape(sb, c);
      } else {
        sb.append(c);
      }
    }
    return sb.toString();
  }

  private static int firstEscaped(String s, boolean keepLayout) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (keepLayout ? escapedInLayout(c) : isControl(c)) {
        return i;
      }
    }
    return -1;
  }

  static void appendEscape(StringBuilder sb, char c) {
    if (c > 0xff) {
      sb.append("\\u").append(HEX[c >> 12]).append(HEX[(c >> 8) & 0xf]);
    } else {
      sb.append("\\x");
    }
    sb.append(HEX[(c >> 4) & 0xf]).append(HEX[c & 0xf]);
  }
}
