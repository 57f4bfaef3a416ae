package dev.polystack.e2e;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * C workloads from test resources ({@code workloads/NAME.c}), compiled with the system gcc into
 * one temporary directory per JVM and cached, so each program is built once per test run.
 * Built with {@code -O2 -fomit-frame-pointer}: stacks through them can only be recovered from
 * CFI, never by following frame pointers.
 */
final class Workloads {
  static final List<String> FLAGS = List.of("-O2", "-fomit-frame-pointer", "-pthread", "-Wall");

  private static final Map<String, Path> BUILT = new ConcurrentHashMap<>();
  private static Path dir;

  private Workloads() {}

  /** The compiled program for {@code workloads/NAME.c}. */
  static Path binary(String name) {
    return BUILT.computeIfAbsent(name, n -> compile(n, n, List.of()));
  }

  /** {@code workloads/NAME.c} linked statically (libc.a: its malloc is in the executable). */
  static Path staticBinary(String name) {
    return BUILT.computeIfAbsent(name + "-static",
        n -> compile(name, n, List.of("-static")));
  }

  private static synchronized Path directory() throws IOException {
    if (dir == null) {
      dir = Files.createTempDirectory("polystack-workloads");
      Path created = dir;
      Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(created)));
    }
    return dir;
  }

  private static Path compile(String name, String output, List<String> extraFlags) {
    try {
      Path d = directory();
      Path source = d.resolve(name + ".c");
      try (InputStream in = Workloads.class.getResourceAsStream("/workloads/" + name + ".c")) {
        if (in == null) {
          throw new IllegalArgumentException("no test resource workloads/" + name + ".c");
        }
        Files.write(source, in.readAllBytes());
      }
      Path binary = d.resolve(output);
      List<String> command = new ArrayList<>(List.of(gcc()));
      command.addAll(FLAGS);
      command.addAll(extraFlags);
      command.addAll(List.of("-o", binary.toString(), source.toString()));
      Path log = d.resolve(name + ".gcc.log");
      Process gcc = new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(log.toFile()).start();
      if (!gcc.waitFor(60, TimeUnit.SECONDS)) {
        gcc.destroyForcibly();
        throw new AssertionError("gcc did not finish compiling " + name + ".c in 60 s");
      }
      if (gcc.exitValue() != 0) {
        throw new AssertionError("gcc failed on " + name + ".c (exit " + gcc.exitValue() + "):\n"
            + Files.readString(log, StandardCharsets.UTF_8));
      }
      return binary;
    } catch (IOException e) {
      throw new AssertionError("cannot build workload " + name + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while building workload " + name, e);
    }
  }

  private static String gcc() {
    for (String candidate : List.of("/usr/bin/gcc", "/usr/bin/cc")) {
      if (Files.isExecutable(Path.of(candidate))) {
        return candidate;
      }
    }
    throw new AssertionError("gcc is not installed: the e2e tests compile their C workloads;"
        + " install it (apt-get install gcc libc6-dev)");
  }

  private static void deleteTree(Path root) {
    try (Stream<Path> paths = Files.walk(root)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // best effort: it is a temporary directory
    }
  }
}
