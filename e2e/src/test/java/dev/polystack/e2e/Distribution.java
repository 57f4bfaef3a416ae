package dev.polystack.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The packaged polystack distribution, run as a real process the way a user runs it: the JVM
 * the ./polystack launcher would exec, with the launcher's JVM options (the launcher itself is
 * not run: it would build the distribution from inside the build that is testing it).
 */
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
    List<String> command = command(args);
    Path out = Files.createTempFile("polystack-out", ".txt");
    Path err = Files.createTempFile("polystack-err", ".txt");
    try {
      ProcessBuilder builder = new ProcessBuilder(command);
      if (workDir != null) {
        builder.directory(workDir.toFile());
      }
      withoutSudo(builder.environment()).putAll(env);
      Process p = builder
          .redirectOutput(out.toFile())
          .redirectError(err.toFile())
          .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
          .start();
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        String threads = threadDump(p.pid());
        p.destroyForcibly();
        throw new AssertionError("polystack " + String.join(" ", args) + " did not finish in 120 s"
            + "; stderr so far:\n" + Files.readString(err, StandardCharsets.UTF_8) + threads);
      }
      return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
          Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  /**
   * The threads of a polystack JVM that overran its time (jcmd Thread.print), so that a hang
   * in CI shows where it was; empty when the JVM does not answer in 20 s.
   */
  static String threadDump(long pid) {
    try {
      Path dump = Files.createTempFile("polystack-threads", ".txt");
      try {
        Process jcmd = new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
            Long.toString(pid), "Thread.print").redirectErrorStream(true)
            .redirectOutput(dump.toFile()).start();
        if (!jcmd.waitFor(20, TimeUnit.SECONDS)) {
          jcmd.destroyForcibly();
          return "\n(no thread dump: jcmd did not answer in 20 s)";
        }
        String text = Files.readString(dump, StandardCharsets.UTF_8);
        return "\nthreads of the polystack JVM:\n"
            + text.substring(0, Math.min(text.length(), 20_000));
      } finally {
        Files.deleteIfExists(dump);
      }
    } catch (IOException e) {
      return "\n(no thread dump: " + e.getMessage() + ")";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }

  /**
   * The environment minus SUDO_*: under sudo, polystack runs launched commands as the sudo
   * caller, who cannot read the tests' private temporary directories. Tests of that default set
   * the variables themselves.
   */
  static java.util.Map<String, String> withoutSudo(java.util.Map<String, String> env) {
    env.keySet().removeIf(k -> k.startsWith("SUDO_"));
    return env;
  }

  /**
   * The command line the ./polystack launcher runs for {@code args}: java with the launcher's
   * JVM options for that subcommand, -jar, the arguments. Tests run what users run.
   */
  static List<String> command(String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(launcherJvmOptions(args));
    command.add("-jar");
    command.add(jar().toString());
    command.addAll(List.of(args));
    return command;
  }

  /**
   * Starts polystack without waiting for it, with stdout and stderr captured to files; for
   * attach-mode runs that a test ends itself, and for sending signals to polystack. The returned
   * process is the JVM itself (no launcher script in between), so signals sent to its pid reach
   * polystack. It runs through {@code env --default-signal=INT,TERM,HUP} (which execs java in
   * the same process) so that it starts with those signals at their default disposition, as in a
   * terminal, even when the test JVM was started with them ignored (a background job of a
   * non-interactive shell ignores SIGINT, and the JVM then never installs a handler for it).
   */
  static Running start(String... args) throws IOException {
    return startWith("--default-signal=INT,TERM,HUP", args);
  }

  /**
   * Like {@link #start}, with the signal dispositions {@code envOption} sets (an option of
   * env(1): {@code --ignore-signal=INT} starts polystack as a background job of a script is).
   */
  static Running startWith(String envOption, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of("env", envOption));
    command.addAll(command(args));
    Path out = Files.createTempFile("polystack-out", ".txt");
    Path err = Files.createTempFile("polystack-err", ".txt");
    ProcessBuilder builder = new ProcessBuilder(command);
    withoutSudo(builder.environment());
    Process p = builder
        .redirectOutput(out.toFile())
        .redirectError(err.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
        .start();
    return new Running(p, out, err, String.join(" ", args));
  }

  /**
   * The JVM options the ./polystack launcher passes for {@code args}: its
   * {@code default_opts=(...)} array and the {@code default_opts+=(...)} it adds for one
   * subcommand, read from the script itself so that tests cannot drift from it. A launcher
   * that adds options in a form this does not read fails the test instead of being ignored.
   */
  static List<String> launcherJvmOptions(String... args) throws IOException {
    String script = Files.readString(root().resolve("polystack"), StandardCharsets.UTF_8);
    Matcher base = Pattern.compile("\\ndefault_opts=\\(([^)]*)\\)").matcher(script);
    if (!base.find()) {
      throw new AssertionError("the launcher has no default_opts=(...) line");
    }
    List<String> options = new ArrayList<>(words(base.group(1)));
    Matcher added = Pattern.compile("if \\[ \"\\$\\(subcommand \"\\$@\"\\)\" = (\\w+) \\]; then"
        + "\\s*default_opts\\+=\\(([^)]*)\\)").matcher(script);
    int read = 0;
    String subcommand = subcommand(args);
    while (added.find()) {
      read++;
      if (added.group(1).equals(subcommand)) {
        options.addAll(words(added.group(2)));
      }
    }
    if (read != script.split("default_opts\\+=\\(", -1).length - 1) {
      throw new AssertionError("the launcher adds JVM options in a form Distribution does not"
          + " read: update launcherJvmOptions");
    }
    return options;
  }

  private static List<String> words(String text) {
    return List.of(text.strip().split("\\s+"));
  }

  /** As the launcher's subcommand(): the first argument not an option nor --plugin-path's. */
  private static String subcommand(String... args) {
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--plugin-path")) {
        i++;
      } else if (!args[i].startsWith("-")) {
        return args[i];
      }
    }
    return "";
  }

  /** A polystack run in progress; close() kills it if it is still running. */
  static final class Running implements AutoCloseable {
    private final Process process;
    private final Path out;
    private final Path err;
    private final String args;

    private Running(Process process, Path out, Path err, String args) {
      this.process = process;
      this.out = out;
      this.err = err;
      this.args = args;
    }

    Process process() {
      return process;
    }

    long pid() {
      return process.pid();
    }

    String stderrSoFar() throws IOException {
      return Files.readString(err, StandardCharsets.UTF_8);
    }

    String stdoutSoFar() throws IOException {
      return Files.readString(out, StandardCharsets.UTF_8);
    }

    /** Sends a signal by name (INT, TERM, HUP, ...) to the polystack JVM. */
    void signal(String name) throws IOException, InterruptedException {
      Process kill = new ProcessBuilder("kill", "-s", name, Long.toString(process.pid()))
          .redirectErrorStream(true).start();
      String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new AssertionError("kill -s " + name + " " + process.pid() + " failed: " + output);
      }
    }

    /** Waits for polystack to exit; fails if it takes longer than {@code seconds}. */
    Result await(long seconds) throws IOException, InterruptedException {
      if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
        String soFar = stderrSoFar();
        String threads = threadDump(process.pid());
        process.destroyForcibly();
        throw new AssertionError("polystack " + args + " did not finish in " + seconds
            + " s; stderr so far:\n" + soFar + threads);
      }
      return new Result(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
          Files.readString(err, StandardCharsets.UTF_8));
    }

    @Override
    public void close() throws IOException, InterruptedException {
      if (process.isAlive()) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }
}
