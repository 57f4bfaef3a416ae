package dev.polystack.host.testutil;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Real shared libraries of this machine that tests read as ELF inputs. */
public final class SystemLibraries {
  private SystemLibraries() {}

  /** The system's libc.so.6 (Debian and Ubuntu keep it in one of two places). */
  public static Path libc() {
    for (String p : List.of("/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libc.so.6")) {
      if (Files.isRegularFile(Path.of(p))) {
        return Path.of(p);
      }
    }
    throw new AssertionError("no libc.so.6 on this machine (install libc6)");
  }
}
