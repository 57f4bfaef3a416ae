package dev.polystack.host.cli;

import java.io.FilterWriter;
import java.io.IOException;
import java.io.Writer;

/**
 * Escapes control characters other than newline and tab on their way out (see {@link
 * TerminalText}): the guarantee that nothing printed through {@link Console} drives the user's
 * terminal, whatever string from a target ended up in a message.
 */
final class TerminalWriter extends FilterWriter {
  TerminalWriter(Writer out) {
    super(out);
  }

  @Override
  public void write(int c) throws IOException {
    if (TerminalText.escapedInLayout((char) c)) {
      StringBuilder sb = new StringBuilder(4);
      TerminalText.appendEscape(sb, (char) c);
      out.write(sb.toString());
    } else {
      out.write(c);
    }
  }

  @Override
  public void write(char[] buf, int off, int len) throws IOException {
    write(new String(buf, off, len), 0, len);
  }

  @Override
  public void write(String s, int off, int len) throws IOException {
    String part = off == 0 && len == s.length() ? s : s.substring(off, off + len);
    String safe = TerminalText.escapeKeepingLayout(part);
    out.write(safe, 0, safe.length());
  }
}
