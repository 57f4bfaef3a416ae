package example.cpython;

import dev.polystack.plugin.api.kit.SnapshotCase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * One case of the directory {@code -Dcpython.cases} names (README.md, "Tests"): {@code
 * NAME.psnap}, a {@code polystack snapshot --embed-modules} of a Python running
 * src/test/python/spinners.py, and {@code NAME.fs_base.txt}, what {@code gdb -batch -p PID -ex
 * 'thread apply all p/x $fs_base'} printed just before it (snapshot format 1 holds no thread
 * pointer, and the capture plan starts from it).
 */
record RecordedCase(String name, Path snapshot, Map<Integer, Long> threadPointers) {
  static final String PROPERTY = "cpython.cases";
  private static final Pattern GDB_THREAD = Pattern.compile("^Thread \\d+ \\(.*?LWP (\\d+)\\)");
  private static final Pattern GDB_VALUE = Pattern.compile("^\\$\\d+ = 0x([0-9a-f]+)$");

  /** Every case of the directory; fails (never skips) when there is none. */
  static Stream<RecordedCase> all() throws IOException {
    String dir = System.getProperty(PROPERTY);
    if (dir == null || dir.isBlank()) {
      throw new IllegalStateException("-D" + PROPERTY + "=DIR names no directory of cases");
    }
    List<RecordedCase> out = new ArrayList<>();
    try (Stream<Path> files = Files.list(Path.of(dir))) {
      for (Path p : files.sorted().toList()) {
        String file = p.getFileName().toString();
        if (file.endsWith(".psnap")) {
          String name = file.substring(0, file.length() - ".psnap".length());
          out.add(new RecordedCase(name, p,
              threadPointers(p.resolveSibling(name + ".fs_base.txt"))));
        }
      }
    }
    if (out.isEmpty()) {
      throw new IllegalStateException(dir + " holds no NAME.psnap case");
    }
    return out.stream();
  }

  /** The kit's case, with the threads' FS bases. */
  SnapshotCase read() throws IOException {
    return SnapshotCase.read(snapshot, List.of()).withThreadPointers(threadPointers);
  }

  /**
   * Kernel tid to FS base, from gdb's lines {@code Thread N (... (LWP TID) ...):} and
   * {@code $N = 0x...}.
   */
  static Map<Integer, Long> threadPointers(Path gdbOutput) throws IOException {
    if (!Files.isRegularFile(gdbOutput)) {
      throw new IOException(gdbOutput + " is missing: record it with gdb before the snapshot"
          + " (README.md, \"Tests\")");
    }
    Map<Integer, Long> out = new HashMap<>();
    Integer tid = null;
    for (String line : Files.readAllLines(gdbOutput)) {
      Matcher thread = GDB_THREAD.matcher(line);
      Matcher value = GDB_VALUE.matcher(line.strip());
      if (thread.find()) {
        tid = Integer.valueOf(thread.group(1));
      } else if (value.matches() && tid != null) {
        out.put(tid, Long.parseUnsignedLong(value.group(1), 16));
        tid = null;
      }
    }
    if (out.isEmpty()) {
      throw new IOException(gdbOutput + " names no thread's $fs_base");
    }
    return Map.copyOf(out);
  }

  @Override
  public String toString() {
    return name;
  }
}
