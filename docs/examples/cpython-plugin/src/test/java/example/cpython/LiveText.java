package example.cpython;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The stacks a case's live walk printed ({@code SnapshotCase.liveStacks()}): per thread, its
 * frame lines leaf first; a Python frame prints as {@code qualname (file:line)}, a native one as
 * {@code function  (module)}.
 */
final class LiveText {
  /** One Python frame line. */
  record PyFrame(String qualname, String file, int line) {}

  private static final Pattern HEADER = Pattern.compile("^Thread (\\d+) ");
  private static final Pattern PYTHON = Pattern.compile("^(\\S.*?) \\((.+):(\\d+)\\)$");

  private LiveText() {}

  /** Tid to frame lines, leaf first, trimmed, in the order printed. */
  static Map<Integer, List<String>> threads(String text) {
    Map<Integer, List<String>> out = new LinkedHashMap<>();
    List<String> current = null;
    for (String line : text.split("\n", -1)) {
      Matcher header = HEADER.matcher(line);
      if (header.find()) {
        current = new ArrayList<>();
        out.put(Integer.valueOf(header.group(1)), current);
      } else if (current != null && line.startsWith("    ")) {
        current.add(line.strip());
      } else if (line.isBlank()) {
        current = null;
      }
    }
    return out;
  }

  /** The Python frame a line prints, or null for a native or error frame. */
  static PyFrame python(String line) {
    Matcher m = PYTHON.matcher(line);
    return m.matches() && !m.group(1).endsWith(" ")
        ? new PyFrame(m.group(1), m.group(2), Integer.parseInt(m.group(3))) : null;
  }

  /** The Python frames at the top of a stack, up to its first native frame. */
  static List<PyFrame> leadingRun(List<String> frames) {
    List<PyFrame> out = new ArrayList<>();
    for (String line : frames) {
      PyFrame f = python(line);
      if (f == null) {
        break;
      }
      out.add(f);
    }
    return out;
  }

  /** Every Python frame of a stack, leaf first. */
  static List<PyFrame> pythonFrames(List<String> frames) {
    return frames.stream().map(LiveText::python).filter(f -> f != null).toList();
  }
}
