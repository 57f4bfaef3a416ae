package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Locations of real binaries used by the tests, and a tiny gcc driver. */
final class TestBinaries {
  static final Path LUAJIT = Path.of("/usr/bin/luajit");
  static final Path LIBC = Path.of("/lib/x86_64-linux-gnu/libc.so.6");

  private TestBinaries() {}

  static Path require(Path p) {
    assumeTrue(Files.isRegularFile(p), p + " not installed");
    return p;
  }

  /** Compiles {@code source} with gcc into {@code dir/name}. */
  static Path compile(Path dir, String name, String source, String... flags) throws IOException, InterruptedException {
    Path src = dir.resolve(name + ".c");
    Files.writeString(src, source, StandardCharsets.UTF_8);
    Path out = dir.resolve(name);
    List<String> cmd = new ArrayList<>(List.of("gcc", "-o", out.toString(), src.toString()));
    cmd.addAll(List.of(flags));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("gcc failed: " + log);
    }
    return out;
  }
}
