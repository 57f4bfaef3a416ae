package dev.polystack.otel.local;

/** The JSON string escaping the hand-written JSON outputs need. */
final class Json {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private Json() {}

  /**
   * Appends {@code s} as a JSON string literal. Besides what JSON requires, it escapes
   * {@code < > &} and U+2028/U+2029 so the same text is safe inside an HTML script element
   * ({@code </script>} cannot appear) and as JavaScript source.
   */
  static StringBuilder string(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == '\u2028' || c == '\u2029') {
            out.append("\\u").append(HEX[c >> 12 & 0xf]).append(HEX[c >> 8 & 0xf])
                .append(HEX[c >> 4 & 0xf]).append(HEX[c & 0xf]);
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"');
  }

  static String string(String s) {
    return string(new StringBuilder(s.length() + 2), s).toString();
  }
}
