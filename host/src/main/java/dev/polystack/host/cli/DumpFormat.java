package dev.polystack.host.cli;

import dev.polystack.host.session.DumpSession;
import dev.polystack.otel.model.FrameLabels;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.plugin.api.Frame;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** How {@code dump}, {@code snapshot} and {@code analyze} print stacks: one format for all. */
public final class DumpFormat {
  private DumpFormat() {}

  /** Prints the stacks (text or JSON) to stdout and what was not captured to stderr. */
  static void print(DumpSession.Dump dump, boolean json, Console console) {
    PrintWriter out = console.out();
    out.print(json ? toJson(dump) + "\n" : text(dump));
    out.flush();
    // Which counters are losses is their declaration's kind (docs/operations.md).
    Map<String, Long> lost = Summaries.losses(dump.losses());
    if (!lost.isEmpty()) {
      console.warn("not captured: " + join(lost));
    }
    Map<String, Long> notes = Summaries.notes(dump.losses());
    if (!notes.isEmpty()) {
      console.err().println("polystack: notes (not losses): " + join(notes));
      console.err().flush();
    }
  }

  private static String join(Map<String, Long> counts) {
    return counts.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
        .collect(Collectors.joining(", "));
  }

  /** The text form, lines ending in a newline; target-derived text escaped (TerminalText). */
  public static String text(DumpSession.Dump dump) {
    Recording labels = new Recording(new TargetInfo(dump.pid(), "", List.of()), 0, 0, 1, "dump",
        dump.modules(), List.of(), Map.of());
    StringWriter buffer = new StringWriter();
    PrintWriter out = new PrintWriter(buffer);
    out.println("Process " + dump.pid());
    for (DumpSession.ThreadDump t : dump.threads()) {
      out.println();
      out.println("Thread " + t.tid() + " \"" + TerminalText.escape(t.name()) + "\" ("
          + t.state() + ")");
      for (Frame f : t.frames()) {
        out.println("    " + TerminalText.escape(FrameLabels.label(f, labels) + moduleSuffix(f)));
      }
    }
    out.flush();
    return buffer.toString().replace(System.lineSeparator(), "\n");
  }

  private static String moduleSuffix(Frame f) {
    if (!Frame.NATIVE.equals(f.type()) || f.module().isEmpty() || f.function().isEmpty()) {
      return "";
    }
    int slash = f.module().lastIndexOf('/');
    return "  (" + f.module().substring(slash + 1) + ")";
  }

  static String toJson(DumpSession.Dump dump) {
    String threads = dump.threads().stream().map(t -> "{\"tid\":" + t.tid()
        + ",\"name\":" + Json.quote(t.name())
        + ",\"state\":" + Json.quote(t.state())
        + ",\"frames\":" + t.frames().stream().map(DumpFormat::toJson)
            .collect(Collectors.joining(",", "[", "]")) + "}")
        .collect(Collectors.joining(",", "[", "]"));
    return "{\"pid\":" + dump.pid() + ",\"threads\":" + threads + "}";
  }

  private static String toJson(Frame f) {
    return "{\"type\":" + Json.quote(f.type())
        + ",\"function\":" + Json.quote(f.function())
        + ",\"file\":" + Json.quote(f.file())
        + ",\"line\":" + f.line()
        + ",\"start_line\":" + f.startLine()
        + ",\"module\":" + Json.quote(f.module())
        + ",\"address\":" + Json.quote("0x" + Long.toHexString(f.address())) + "}";
  }
}
