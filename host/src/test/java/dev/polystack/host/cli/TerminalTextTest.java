package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/** Control characters from a target never reach the terminal raw (docs/reliability.md). */
class TerminalTextTest {

  @Test
  void everyControlCharacterOfAFieldIsEscaped() {
    assertEquals("\\x1b[31mred\\x1b[0m", TerminalText.escape("\u001b[31mred\u001b[0m"));
    assertEquals("a\\x0ab\\x09c\\x0d\\x07\\x00", TerminalText.escape("a\nb\tc\r\u0007\u0000"));
    assertEquals("\\x7f \\x80 \\x9b2J \\x9f", TerminalText.escape("\u007f \u0080 \u009b2J \u009f"));
    assertEquals("é ü 日本 \u00a0", TerminalText.escape("é ü 日本 \u00a0"),
        "printable text stays");
    String plain = "main  (libc.so.6)";
    assertSame(plain, TerminalText.escape(plain), "nothing to escape: no copy");
    assertEquals("", TerminalText.escape(null));
  }

  @Test
  void bidiControlsAndZeroWidthCharactersAreEscaped() {
    assertEquals("evil\\u202eexe", TerminalText.escape("evil\u202eexe"));
    String every = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"
        + "\u061c\u200b\u200c\u200d\u2060\ufeff";
    assertEquals("\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069"
        + "\\u200e\\u200f\\u061c\\u200b\\u200c\\u200d\\u2060\\ufeff",
        TerminalText.escape(every));
    assertEquals("a\n\\u2067b", TerminalText.escapeKeepingLayout("a\n\u2067b"));
    String letters = "\u00e9 \u05d0\u05d1 \u2010";
    assertSame(letters, TerminalText.escape(letters), "right-to-left letters stay");
    assertEquals("\"x\\u202ey\"", Json.quote("x\u202ey"));
  }

  @Test
  void laidOutTextKeepsItsNewlinesAndTabs() {
    assertEquals("a\n\tb \\x1b]0;title\\x07\n",
        TerminalText.escapeKeepingLayout("a\n\tb \u001b]0;title\u0007\n"));
  }

  @Test
  void theConsoleEscapesEverythingItPrints() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    Console console = new Console(new PrintWriter(out), new PrintWriter(err));

    console.out().println("Thread 7 \"\u001b[2J\"");
    console.out().print('\u009b');
    console.out().write("x\u001by".toCharArray(), 0, 3);
    console.out().flush();
    console.warn("skipped /tmp/\u001b]0;pwned\u0007lib.so: replaced");
    console.error("line\none");

    assertEquals("Thread 7 \"\\x1b[2J\"\n\\x9bx\\x1by", out.toString());
    assertEquals("polystack: warning: skipped /tmp/\\x1b]0;pwned\\x07lib.so: replaced\n"
        + "polystack: line one\n", err.toString());
  }

  @Test
  void theStatusLineDrawsItselfAndADiagnosticClearsIt() {
    StringWriter err = new StringWriter();
    Console console = new Console(new PrintWriter(new StringWriter()), new PrintWriter(err));
    console.status("polystack: 5 samples \u001b");
    console.note("detaching, please wait");
    console.clearStatus(); // already cleared: nothing more
    assertEquals("\r\u001b[Kpolystack: 5 samples \\x1b\r\u001b[Kpolystack: detaching, please"
        + " wait\n", err.toString());
  }

  @Test
  void jsonEscapesDelAndC1SoItPassesTheConsoleUnchanged() {
    assertEquals("\"\\u001b[0m \\u007f \\u009b \\n é\"",
        Json.quote("\u001b[0m \u007f \u009b \n é"));
  }
}
