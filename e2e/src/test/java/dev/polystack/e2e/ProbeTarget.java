package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A started probe_target (e2e/src/test/resources/workloads/probe_target.c): its stdout lines
 * and stdin, and in {@code hw} mode where its generated code and a data word are; with the probe
 * tests' way to start {@code polystack probe} on it and read its JSON lines.
 */
record ProbeTarget(Process process, BufferedReader out, OutputStream in, long jit, long data) {
  private static final Pattern CALLS = Pattern.compile(
      "\"type\":\"site_summary\".*\"site\":\"([^\"]+)\",\"calls\":(\\d+)");
  private static final Pattern THREAD = Pattern.compile(
      "\"type\":\"thread_summary\".*\"tid\":(\\d+),\"site\":\"([^\"]+)\",\"calls\":(\\d+)");

  static ProbeTarget start(String... args) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(Workloads.binary("probe_target").toString());
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
        StandardCharsets.UTF_8));
    assertEquals("ready", out.readLine());
    long jit = 0;
    long data = 0;
    if (args[0].equals("hw")) {
      jit = address(out.readLine(), "jit ");
      data = address(out.readLine(), "data ");
    }
    return new ProbeTarget(p, out, p.getOutputStream(), jit, data);
  }

  private static long address(String line, String prefix) {
    assertTrue(line != null && line.startsWith(prefix + "0x"), String.valueOf(line));
    return Long.parseUnsignedLong(line.substring(prefix.length() + 2), 16);
  }

  int pid() {
    return (int) process.pid();
  }

  void say(String line) throws Exception {
    in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    in.flush();
  }

  /**
   * Reads its next line, which must be {@code expected}; if it ended instead, says how (a
   * signal shows as 128 + its number: 133 is SIGTRAP).
   */
  void expectLine(String expected) throws Exception {
    String line = out.readLine();
    if (line == null && process.waitFor(10, TimeUnit.SECONDS)) {
      throw new AssertionError("the target ended with status " + process.exitValue()
          + " instead of printing '" + expected + "'");
    }
    assertEquals(expected, line);
  }

  /** Ends its input (it exits) and returns its exit status. */
  int finish() throws Exception {
    in.close();
    assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the target did not exit");
    return process.exitValue();
  }

  /**
   * Starts {@code polystack probe} (with {@code --hw} when {@code hw}) on this target, writing
   * JSON lines to {@code output}, and waits until its probes are in: its uprobe links exist, or
   * (hardware) its site lines are written, which happens once every thread is armed.
   */
  Distribution.Running probe(boolean hw, Path output, String... args) throws Exception {
    return probe(hw, "json", output, args);
  }

  /** As {@link #probe(boolean, Path, String...)}, writing {@code format} (text or json). */
  Distribution.Running probe(boolean hw, String format, Path output, String... args)
      throws Exception {
    List<String> all = new ArrayList<>(List.of("probe", "--pid", Integer.toString(pid())));
    if (hw) {
      all.add("--hw");
    }
    all.addAll(List.of("--format", format, "-o", output.toString()));
    all.addAll(List.of(args));
    Distribution.Running polystack = Distribution.start(all.toArray(String[]::new));
    Awaits.until(hw ? "polystack's breakpoints" : "polystack's uprobe links", 60_000,
        () -> !polystack.process().isAlive() || (hw
            ? Files.exists(output) && Files.readString(output).contains(format.equals("json")
                ? "\"type\":\"site\"" : "# session ")
            : !AllocationProfileTest.ownLinks(polystack.pid()).isEmpty()));
    assertTrue(polystack.process().isAlive(), polystack.stderrSoFar());
    return polystack;
  }

  /** Calls by site from a run's {@code site_summary} lines. */
  static Map<String, Long> calls(String json) {
    Map<String, Long> out = new HashMap<>();
    Matcher m = CALLS.matcher(json);
    while (m.find()) {
      out.put(m.group(1), Long.parseLong(m.group(2)));
    }
    return out;
  }

  /** Calls of each thread by site from a run's {@code thread_summary} lines. */
  static Map<String, List<Long>> perThread(String json) {
    Map<String, List<Long>> out = new HashMap<>();
    Matcher m = THREAD.matcher(json);
    while (m.find()) {
      out.computeIfAbsent(m.group(2), k -> new ArrayList<>()).add(Long.parseLong(m.group(3)));
    }
    return out;
  }

  /**
   * How often each value of {@code register} ({@code rdi}, {@code rax}...) was recorded in the
   * {@code hit} lines of {@code site}.
   */
  static Map<Long, Long> hitValues(String json, String site, String register) {
    Map<Long, Long> out = new HashMap<>();
    Matcher m = Pattern.compile("\"type\":\"hit\".*\"site\":\"" + Pattern.quote(site)
        + "\",.*\"" + register + "\":\"0x(\\p{XDigit}+)\"").matcher(json);
    while (m.find()) {
      out.merge(Long.parseLong(m.group(1), 16), 1L, Long::sum);
    }
    return out;
  }

  /** Each of {@code first} .. {@code first + n - 1} seen {@code times} times. */
  static Map<Long, Long> each(long first, long n, long times) {
    Map<Long, Long> out = new HashMap<>();
    for (long i = 0; i < n; i++) {
      out.put(first + i, times);
    }
    return out;
  }
}
