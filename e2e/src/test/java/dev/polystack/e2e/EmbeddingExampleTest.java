package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedding example of docs/examples/embedding, as a vendor builds and runs it: compiled
 * with javac against the host and otel-bridge classes and their dependencies alone (what its
 * pom.xml declares), then run as its own JVM against a real busy program; the program must be
 * in its output with samples, and each interval's OTLP request must have a size. Where BPF
 * cannot run, it must say why in one line and exit 1.
 */
class EmbeddingExampleTest {
  private static final String MAIN = "com.example.profiling.ProfileForSeconds";
  @TempDir static Path dir;
  private static Path classes;

  @BeforeAll
  static void build() throws Exception {
    Path example = Distribution.root().resolve("docs/examples/embedding");
    classes = Files.createDirectories(dir.resolve("classes"));
    List<String> args = new ArrayList<>(List.of("--release", "17", "-Xlint:all,-path", "-Werror",
        "-d", classes.toString(), "-classpath", polystackClassPath()));
    try (Stream<Path> sources = Files.walk(example.resolve("src/main/java"))) {
      sources.filter(p -> p.toString().endsWith(".java")).forEach(p -> args.add(p.toString()));
    }
    var err = new java.io.ByteArrayOutputStream();
    int rc = ToolProvider.getSystemJavaCompiler().run(null, err, err, args.toArray(String[]::new));
    assertEquals(0, rc, "the example does not compile against host and otel-bridge:\n" + err);
  }

  /**
   * The host and otel-bridge classes and what they depend on at run time, from the test class
   * path: the test's own classes, the test-only libraries and test jars left out.
   */
  private static String polystackClassPath() {
    List<String> kept = new ArrayList<>();
    boolean host = false;
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      String p = entry.replace('\\', '/');
      if (p.contains("/e2e/target/") || p.contains("/junit") || p.contains("/opentest4j/")
          || p.contains("/apiguardian/") || p.endsWith("-tests.jar")
          || p.contains("/test-classes")) {
        continue;
      }
      host |= p.contains("/host/target/") || p.contains("/dev/polystack/host/");
      kept.add(entry);
    }
    assertTrue(host, "the host classes are not on the test class path");
    return String.join(File.pathSeparator, kept);
  }

  private static Tools.Output runExample(java.util.Map<String, String> env, String... args)
      throws Exception {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
        "-cp", classes + File.pathSeparator + polystackClassPath(), MAIN));
    command.addAll(List.of(args));
    if (env.isEmpty()) {
      return Tools.run(120, null, command);
    }
    List<String> withEnv = new ArrayList<>(List.of("env"));
    env.forEach((k, v) -> withEnv.add(k + "=" + v));
    withEnv.addAll(command);
    return Tools.run(120, null, withEnv);
  }

  @Test
  void profilesABusyProgramAndPrintsItsSamplesAndTheOtlpRequestSize() throws Exception {
    try (Target target = Target.start(Workloads.binary("hot_cold"))) {
      Awaits.cpuTicks(target.pid(), 2, 20_000); // running its loop, past the loader
      Tools.Output out = runExample(java.util.Map.of(), "4", Integer.toString(target.pid()));
      System.out.println(out.stdout()); // in the test report: the figures docs/embedding.md shows

      assertEquals(0, out.exitCode(), out.stdout() + out.stderr());
      Matcher process = Pattern.compile("(?m)^process " + target.pid()
          + " hot_cold: (\\d+) samples$").matcher(out.stdout());
      assertTrue(process.find(), "no line for the program:\n" + out.stdout() + out.stderr());
      assertTrue(Long.parseLong(process.group(1)) > 0, out.stdout());
      Matcher request = Pattern.compile("(?m)^interval \\d+: 1 processes, (\\d+) samples,"
          + " OTLP request (\\d+) bytes$").matcher(out.stdout());
      assertTrue(request.find(), "no interval with the program:\n" + out.stdout());
      assertTrue(Long.parseLong(request.group(2)) > 0, out.stdout());
      assertTrue(target.isAlive(), "the program runs on");
    }
  }

  @Test
  void whereBpfCannotRunItSaysWhyAndExits1() throws Exception {
    Tools.Output out = runExample(java.util.Map.of("POLYSTACK_BPF_DISABLE", "1"), "1");

    assertEquals(1, out.exitCode(), out.stdout() + out.stderr());
    assertEquals("cannot profile here: BPF disabled by POLYSTACK_BPF_DISABLE",
        out.stderr().strip());
  }
}
