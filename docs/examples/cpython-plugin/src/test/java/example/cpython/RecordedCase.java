package example.cpython;

import dev.polystack.plugin.api.kit.SnapshotCase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * One case of the directory {@code -Dcpython.cases} names (README.md, "Tests"): {@code
 * NAME.psnap}, a {@code polystack snapshot --embed-modules} of a Python running
 * src/test/python/spinners.py, which holds each thread's thread pointer (the capture plan
 * starts from it).
 */
record RecordedCase(String name, Path snapshot) {
  static final String PROPERTY = "cpython.cases";

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
          out.add(new RecordedCase(file.substring(0, file.length() - ".psnap".length()), p));
        }
      }
    }
    if (out.isEmpty()) {
      throw new IllegalStateException(dir + " holds no NAME.psnap case");
    }
    return out.stream();
  }

  /** The kit's case. */
  SnapshotCase read() throws IOException {
    return SnapshotCase.read(snapshot, List.of());
  }

  @Override
  public String toString() {
    return name;
  }
}
