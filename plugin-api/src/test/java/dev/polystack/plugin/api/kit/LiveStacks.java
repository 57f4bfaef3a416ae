package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.Frame;
import java.util.ArrayList;
import java.util.List;

/**
 * The stacks a case's live walk printed when it was recorded ({@link SnapshotCase#liveStacks}),
 * by thread: a block {@code Thread TID "name" (state)} followed by one indented line per frame,
 * {@code function (file:line)} for a runtime frame.
 */
final class LiveStacks {
  private LiveStacks() {}

  /** The frame lines of thread {@code tid}, leaf first, trimmed; empty if it has no block. */
  static List<String> thread(String text, int tid) {
    List<String> lines = new ArrayList<>();
    boolean in = false;
    for (String line : text.split("\n", -1)) {
      if (line.startsWith("Thread ")) {
        in = line.startsWith("Thread " + tid + " ");
      } else if (in && line.startsWith("    ")) {
        lines.add(line.trim());
      } else if (in && line.isBlank()) {
        in = false;
      }
    }
    return lines;
  }

  /**
   * Where {@code f} is among {@code lines} at or after {@code from}: a line naming its function
   * and, when it has one, its file and line as the live walk printed them; -1 if none does.
   */
  static int find(List<String> lines, int from, Frame f) {
    String where = f.file().isEmpty() ? "" : "(" + f.file() + ":" + f.line() + ")";
    for (int i = Math.max(0, from); i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.startsWith(f.function() + " (") && line.endsWith(where)) {
        return i;
      }
    }
    return -1;
  }
}
