package dev.polystack.host.snapshot;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * gdb's backtraces of one thread, taken just before and just after a snapshot by
 * record-corpus.sh ({@code NAME.gdb.txt}): the corpus test's oracle for native frames.
 *
 * @param tid the thread
 * @param before frames before the snapshot, leaf first
 * @param after frames after it, leaf first
 * @param unwound false when gdb stopped at the leaf (JIT-compiled code has no unwind table)
 */
record GdbBacktraces(int tid, List<GdbFrame> before, List<GdbFrame> after, boolean unwound) {
  private static final Pattern HEADER = Pattern.compile("^# gdb backtrace of thread (\\d+) "
      + "(before|after) the snapshot$");
  // "#3  0x000055de749ab86b in ?? ()", "#7  0x... in main ()", "#8  0x... in f (a=1) at x.c:5"
  private static final Pattern FRAME = Pattern.compile("^#\\d+\\s+0x([0-9a-f]+) in (\\S+) \\(");

  /** One frame: its return address (the pc for the leaf), and the function, empty for ??. */
  record GdbFrame(long pc, String function) {
    @Override
    public String toString() {
      return (function.isEmpty() ? "??" : function) + "@0x" + Long.toHexString(pc);
    }
  }

  GdbBacktraces {
    before = List.copyOf(before);
    after = List.copyOf(after);
  }

  static GdbBacktraces read(Path file) throws IOException {
    int tid = -1;
    List<GdbFrame> before = new ArrayList<>();
    List<GdbFrame> after = new ArrayList<>();
    List<GdbFrame> current = null;
    boolean unwound = true;
    for (String line : Files.readAllLines(file)) {
      Matcher h = HEADER.matcher(line);
      Matcher f = FRAME.matcher(line);
      if (h.matches()) {
        tid = Integer.parseInt(h.group(1));
        current = h.group(2).equals("before") ? before : after;
      } else if (line.equals("# gdb could not unwind this thread past its leaf")) {
        unwound = false;
      } else if (f.find() && current != null) {
        String function = f.group(2);
        current.add(new GdbFrame(Long.parseUnsignedLong(f.group(1), 16),
            function.equals("??") ? "" : function));
      } else {
        throw new IOException(file + ": not a line of gdb's backtrace: " + line);
      }
    }
    if (tid < 0 || before.isEmpty() || after.isEmpty()) {
      throw new IOException(file + ": two backtraces expected");
    }
    return new GdbBacktraces(tid, before, after, unwound);
  }

  /** The frames both backtraces share from the root up (same address), leaf first. */
  List<GdbFrame> shared() {
    int n = 0;
    while (n < before.size() && n < after.size()
        && before.get(before.size() - 1 - n).equals(after.get(after.size() - 1 - n))) {
      n++;
    }
    return before.subList(before.size() - n, before.size());
  }
}
