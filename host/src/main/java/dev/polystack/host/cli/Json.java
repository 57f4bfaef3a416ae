package dev.polystack.host.cli;

/**
 * The one JSON string escaper the CLI's line outputs need. Every control character comes out as
 * an escape, so JSON printed to a terminal passes {@link TerminalWriter} unchanged.
 */
final class Json {
  private Json() {}

  static String quote(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (TerminalText.isControl(c)) {
            // DEL and C1 too: valid JSON either way, but raw they would reach a terminal.
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"').toString();
  }
}
