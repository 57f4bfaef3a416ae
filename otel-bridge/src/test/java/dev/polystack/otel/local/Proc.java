package dev.polystack.otel.local;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs an external tool the way a user would, bounded in time, and keeps what it printed. */
record Proc(List<String> command, int exitCode, String stdout, String stderr) {

  static Proc run(Duration timeout, Path workDir, String... command)
      throws IOException, InterruptedException {
    // Files rather than pipes: a chatty tool cannot block on a full pipe while we wait.
    Path out = Files.createTempFile(workDir, "stdout", ".txt");
    Path err = Files.createTempFile(workDir, "stderr", ".txt");
    Process p = new ProcessBuilder(command).directory(workDir.toFile())
        .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly().waitFor();
      throw new AssertionError(String.join(" ", command) + " did not finish within " + timeout
          + "\nstderr:\n" + Files.readString(err, StandardCharsets.UTF_8));
    }
    return new Proc(List.of(command), p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  /** Fails with the command and its output unless it exited 0. */
  Proc assertSuccess() {
    if (exitCode != 0) {
      throw new AssertionError(this + "\n(exit " + exitCode + ")");
    }
    return this;
  }

  @Override
  public String toString() {
    return "$ " + String.join(" ", command) + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr;
  }
}
