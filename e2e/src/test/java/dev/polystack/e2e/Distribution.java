package dev.polystack.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The packaged polystack distribution, run as a real process the way a user runs it. */
final class Distribution {

  /** What one run printed and returned. */
  record Result(int exitCode, String stdout, String stderr) {
    List<String> stderrLines() {
      return stderr.lines().filter(l -> !l.isBlank()).toList();
    }
  }

  private Distribution() {}

  static Path root() {
    String root = System.getProperty("polystack.root");
    if (root == null) {
      throw new IllegalStateException("system property polystack.root is not set (run via Maven)");
    }
    return Path.of(root).toAbsolutePath().normalize();
  }

  static Path jar() {
    Path jar = root().resolve("host/target/polystack-host.jar");
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(jar + " is missing: run 'mvn package' first");
    }
    return jar;
  }

  static Result run(String... args) throws IOException, InterruptedException {
    return run(null, java.util.Map.of(), args);
  }

  /** Runs polystack in {@code workDir} (null: inherited) with extra environment variables. */
  static Result run(Path workDir, java.util.Map<String, String> env, String... args)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-jar");
    command.add(jar().toString());
    command.addAll(List.of(args));
    Path out = Files.createTempFile("polystack-out", ".txt");
    Path err = Files.createTempFile("polystack-err", ".txt");
    try {
      ProcessBuilder builder = new ProcessBuilder(command);
      if (workDir != null) {
        builder.directory(workDir.toFile());
      }
      builder.environment().putAll(env);
      Process p = builder
          .redirectOutput(out.toFile())
          .redirectError(err.toFile())
          .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
          .start();
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("polystack " + String.join(" ", args) + " did not finish in 120 s");
      }
      return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
          Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }
}
