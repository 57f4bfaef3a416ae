package dev.polystack.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Programs nobody here wrote, used as oracles (go tool pprof, headless Chromium, Python's json
 * module), and the folded-stack text format. A missing tool fails the test with a clear message:
 * ./run-tests installs them.
 */
final class Tools {
  private Tools() {}

  /** What a tool printed; stdout and stderr are kept apart. */
  record Output(int exitCode, String stdout, String stderr) {}

  static Output run(long timeoutSeconds, Path stdin, List<String> command)
      throws IOException, InterruptedException {
    Path out = Files.createTempFile("polystack-tool-out", ".txt");
    Path err = Files.createTempFile("polystack-tool-err", ".txt");
    try {
      Process p = new ProcessBuilder(command)
          .redirectOutput(out.toFile())
          .redirectError(err.toFile())
          .redirectInput(stdin == null ? Path.of("/dev/null").toFile() : stdin.toFile())
          .start();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
        throw new AssertionError(String.join(" ", command) + " did not finish in "
            + timeoutSeconds + " s; stderr: " + Files.readString(err, StandardCharsets.UTF_8));
      }
      return new Output(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
          Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  static String go() {
    return find("Go (for 'go tool pprof', which reads our pprof output); install it"
        + " (apt-get install golang-go)", "/usr/local/go/bin/go", "/usr/lib/go/bin/go",
        "/usr/bin/go");
  }

  static String chromium() {
    return find("Chromium (renders the HTML flame graph); install it (apt-get install chromium)",
        "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome");
  }

  /**
   * Opens a local page in headless Chromium with a 5 s virtual-time budget (its timers run, then
   * Chromium exits) and fails the test unless Chromium exits 0; {@code options} say what to make
   * of the page ({@code --dump-dom}, {@code --screenshot=FILE}). {@code profile} is Chromium's
   * own data folder for this run.
   */
  static Output headlessChromium(Path profile, Path page, String... options)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of(chromium(), "--headless", "--no-sandbox",
        "--disable-gpu", "--user-data-dir=" + profile, "--virtual-time-budget=5000"));
    command.addAll(List.of(options));
    command.add(page.toUri().toString());
    Output o = run(120, null, command);
    if (o.exitCode() != 0) {
      throw new AssertionError("Chromium failed on " + page + " (exit " + o.exitCode() + "): "
          + o.stderr());
    }
    return o;
  }

  static String python3() {
    return find("python3 (its json module checks our JSON); install it (apt-get install"
        + " python3)", "/usr/bin/python3", "/usr/local/bin/python3");
  }

  /**
   * Runs a Python 3 script over a file on stdin and returns what it printed; the script failing
   * (for example json.load rejecting the input) fails the test with Python's message.
   */
  static String python(String script, Path input) throws IOException, InterruptedException {
    Output o = run(60, input, List.of(python3(), "-c", script));
    if (o.exitCode() != 0) {
      throw new AssertionError("python3 rejected " + input + " (exit " + o.exitCode() + "): "
          + o.stderr());
    }
    return o.stdout();
  }

  private static String find(String what, String... candidates) {
    for (String candidate : candidates) {
      if (Files.isExecutable(Path.of(candidate))) {
        return candidate;
      }
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      String name = Path.of(candidates[0]).getFileName().toString();
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, name))) {
        return Path.of(dir, name).toString();
      }
    }
    throw new AssertionError("missing " + what);
  }

  /**
   * A folded-stack file ("root;...;leaf COUNT" per line) as stack to count, in file order.
   * Fails on any line that is not in that form.
   */
  static Map<String, Long> folded(Path file) throws IOException {
    Map<String, Long> stacks = new LinkedHashMap<>();
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      if (line.isBlank()) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      if (space <= 0) {
        throw new AssertionError("not a folded line: '" + line + "'");
      }
      long count = Long.parseLong(line.substring(space + 1));
      stacks.merge(line.substring(0, space), count, Long::sum);
    }
    return stacks;
  }

  static long total(Map<String, Long> folded) {
    return folded.values().stream().mapToLong(Long::longValue).sum();
  }

  /** The frames of a folded stack, root first. */
  static List<String> frames(String stack) {
    return new ArrayList<>(List.of(stack.split(";")));
  }
}
