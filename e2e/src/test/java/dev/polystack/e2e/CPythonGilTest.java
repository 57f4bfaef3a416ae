package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A third-party plug-in's own sample attribute, end to end: the CPython example copies the GIL's
 * state at the tick and marks each sample {@code cpython.gil_held} (docs/examples/cpython-plugin,
 * "Sample attribute"). On {@link CPythonPluginTest#THREADS}, where the main thread spins holding
 * the GIL and another hashes in C after releasing it, pprof's labels must say so: every sample
 * hashing the buffer false (the digest's finalization takes the GIL back), the spinning ones
 * mostly true (the spinner gives the GIL up at each switch
 * interval while the hasher takes it back between its calls). Its own sample type, {@code
 * cpython.gil_samples}, must weigh exactly the samples labelled true.
 */
class CPythonGilTest {
  /** A sample's labels print a line each above its stack: " cpython.gil_held:  true". */
  private static final Pattern LABEL = Pattern.compile("^\\s*([\\w.]+):\\s+(\\S+)$");
  /** The first frame line of a stack carries its sample count: "        12   spin". */
  private static final Pattern FIRST = Pattern.compile("^\\s*(\\d+)\\s{2,}(\\S.*)$");

  @TempDir static Path dir;
  private static Path pluginDir;

  @BeforeAll
  static void build() throws Exception {
    pluginDir = CPythonExample.build(dir).pluginDir();
  }

  @Test
  void gilHeldSaysWhichThreadHeldItOnDebianPython311() throws Exception {
    Path python = Path.of("/usr/bin/python3.11");
    assumeTrue(Files.isExecutable(python), "Debian's python3.11 not installed");
    check(python);
  }

  @Test
  void gilHeldSaysWhichThreadHeldItOnPyenvPython312() throws Exception {
    Optional<Path> python = CPythonExample.pyenv("3.12.", "python3.12");
    assumeTrue(python.isPresent(), "pyenv python3.12 not installed");
    check(python.get());
  }

  /** One pprof stack: its sample count, labels and frames, leaf first. */
  private record Trace(long samples, Map<String, String> labels, List<String> frames) {}

  private static void check(Path python) throws Exception {
    Path work = Files.createTempDirectory(dir, "gil");
    Path script = work.resolve("threads.py");
    Files.writeString(script, CPythonPluginTest.THREADS);
    Path pprof = work.resolve("out.pb.gz");
    var result = Distribution.run(work, Map.of(), "record", "--plugin-path",
        pluginDir.toString(), "-o", pprof.toString(), "--", python.toString(),
        script.toString(), "2");
    assertEquals(0, result.exitCode(), result.stderr());
    var traces = Tools.run(300, null, List.of(Tools.go(), "tool", "pprof", "-traces",
        "-sample_index=samples", pprof.toString()));
    assertEquals(0, traces.exitCode(), traces.stderr());

    long hashing = 0;
    long spinning = 0;
    long spinningHeld = 0;
    long pythonSamples = 0;
    long labelled = 0;
    for (Trace t : traces(traces.stdout())) {
      String held = t.labels().get("cpython.gil_held");
      if (hashingWithoutGil(t)) {
        // Unlabelled if walked before the plan existed (counted below), never held.
        assertNotEquals("true", held, "a sample hashing without the GIL: " + t);
        hashing += t.samples();
      } else if (t.frames().contains("spin")) {
        spinning += t.samples();
        spinningHeld += "true".equals(held) ? t.samples() : 0;
      }
      // pprof prints "<module>" as "<unknown>" (it drops <...> as C++ template arguments).
      if (t.frames().contains("spin") || t.frames().contains("Thread.run")) {
        pythonSamples += t.samples();
        labelled += held != null ? t.samples() : 0;
      }
    }
    String context = python + ": hashing " + hashing + ", spinning " + spinning + " (GIL held in "
        + spinningHeld + "), labelled " + labelled + " of " + pythonSamples + " Python samples\n"
        + result.stderr();
    System.out.println("CPythonGilTest: " + context.lines().findFirst().orElse(""));
    assertTrue(hashing >= 10 && spinning >= 10, context);
    assertTrue(spinningHeld * 10 >= spinning * 8, "the spinner held the GIL in under 80% of its"
        + " samples: " + context);
    // Samples walked before the plan existed carry no copy of the GIL, hence no label.
    assertTrue(labelled * 10 >= pythonSamples * 9, context);

    // The plug-in's own sample type counts exactly the samples labelled true (API 2.0).
    var weighed = Tools.run(300, null, List.of(Tools.go(), "tool", "pprof", "-traces",
        "-sample_index=cpython.gil_samples", pprof.toString()));
    assertEquals(0, weighed.exitCode(), weighed.stderr());
    assertTrue(weighed.stdout().contains("Type: cpython.gil_samples"), weighed.stdout());
    long gilSpinning = 0;
    for (Trace t : traces(weighed.stdout())) {
      if (t.samples() == 0) {
        continue; // pprof may print a stack whose value is 0
      }
      assertFalse(hashingWithoutGil(t), "a stack hashing without the GIL weighs GIL samples: "
          + t);
      assertEquals("true", t.labels().get("cpython.gil_held"), "GIL samples not held: " + t);
      gilSpinning += t.frames().contains("spin") ? t.samples() : 0;
    }
    assertEquals(spinningHeld, gilSpinning, context);
  }

  /**
   * A sample in libcrypto's hashing of the 4 MiB buffer, which hashlib does after releasing the
   * GIL; {@code digest()} then finalizes (EVP_DigestFinal) holding it again, so those are not.
   */
  private static boolean hashingWithoutGil(Trace t) {
    return t.frames().stream().anyMatch(f -> f.startsWith("SHA256") || f.startsWith("sha256"))
        && t.frames().stream().noneMatch(f -> f.startsWith("EVP_DigestFinal"));
  }

  /** The stacks of {@code go tool pprof -traces}, as printed between its separator lines. */
  private static List<Trace> traces(String text) {
    List<Trace> out = new ArrayList<>();
    Map<String, String> labels = new HashMap<>();
    List<String> frames = new ArrayList<>();
    long samples = 0;
    for (String line : text.split("\n")) {
      if (line.startsWith("-----------+")) {
        if (!frames.isEmpty()) {
          out.add(new Trace(samples, Map.copyOf(labels), List.copyOf(frames)));
        }
        labels.clear();
        frames.clear();
        continue;
      }
      Matcher first = FIRST.matcher(line);
      Matcher label = LABEL.matcher(line);
      if (frames.isEmpty() && first.matches()) {
        samples = Long.parseLong(first.group(1));
        frames.add(first.group(2).strip());
      } else if (frames.isEmpty() && label.matches()) {
        labels.put(label.group(1), label.group(2));
      } else if (!frames.isEmpty() && !line.isBlank()) {
        frames.add(line.strip());
      }
    }
    return out;
  }
}
