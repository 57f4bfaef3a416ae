package dev.polystack.e2e;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A workload a test starts itself (for attach and dump), with its stdin kept open as a pipe the
 * test controls and its stdout and stderr captured to a file. close() kills it if still running.
 */
final class Target implements AutoCloseable {

  /** The fields of /proc/PID/status the tests look at. */
  record Status(String state, int tracerPid) {
    /** Stopped (T) or in a ptrace-stop (t): a target we left like this would hang. */
    boolean stopped() {
      return state.startsWith("T") || state.startsWith("t");
    }
  }

  private final Process process;
  private final Path output;

  private Target(Process process, Path output) {
    this.process = process;
    this.output = output;
  }

  static Target start(Path binary, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of(binary.toString()));
    command.addAll(List.of(args));
    Path output = Files.createTempFile("polystack-target", ".txt");
    Process p = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(output.toFile()).start();
    return new Target(p, output);
  }

  int pid() {
    return Math.toIntExact(process.pid());
  }

  boolean isAlive() {
    return process.isAlive();
  }

  OutputStream stdin() {
    return process.getOutputStream();
  }

  String output() throws IOException {
    return Files.readString(output, StandardCharsets.UTF_8);
  }

  /** State and TracerPid from /proc/PID/status, or null once the process is gone. */
  Status status() throws IOException {
    List<String> lines;
    try {
      lines = Files.readAllLines(Path.of("/proc/" + pid() + "/status"));
    } catch (NoSuchFileException e) {
      return null;
    }
    String state = null;
    int tracer = -1;
    for (String line : lines) {
      if (line.startsWith("State:")) {
        state = line.substring("State:".length()).strip();
      } else if (line.startsWith("TracerPid:")) {
        tracer = Integer.parseInt(line.substring("TracerPid:".length()).strip());
      }
    }
    return new Status(state, tracer);
  }

  /** CPU time used so far (utime + stime from /proc/PID/stat, in clock ticks). */
  long cpuTicks() throws IOException {
    String stat = Files.readString(Path.of("/proc/" + pid() + "/stat"));
    // Fields after the parenthesised name (which may contain spaces): state is field 3,
    // utime and stime are fields 14 and 15.
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  /** Waits until the output contains {@code text} (e.g. a "ready" line). */
  void awaitOutput(String text, long millis) throws IOException, InterruptedException {
    awaitCondition("output '" + text + "'", millis, () -> {
      try {
        return output().contains(text);
      } catch (IOException e) {
        return false;
      }
    });
  }

  /** Waits until a tracer (polystack) is attached. */
  void awaitTraced(long millis) throws IOException, InterruptedException {
    awaitCondition("a tracer", millis, () -> {
      try {
        Status s = status();
        return s != null && s.tracerPid() > 0;
      } catch (IOException e) {
        return false;
      }
    });
  }

  private void awaitCondition(String what, long millis, BooleanSupplier condition)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + millis * 1_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("target " + pid() + " did not show " + what + " within "
            + millis + " ms; status " + status() + ", output: " + output());
      }
      Thread.sleep(20);
    }
  }

  /** Waits for the exit and returns the exit code; fails after {@code seconds}. */
  int awaitExit(long seconds) throws IOException, InterruptedException {
    if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
      throw new AssertionError("target " + pid() + " did not exit within " + seconds
          + " s; status " + status() + ", output: " + output());
    }
    return process.exitValue();
  }

  @Override
  public void close() throws IOException, InterruptedException {
    if (process.isAlive()) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
    Files.deleteIfExists(output);
  }
}
