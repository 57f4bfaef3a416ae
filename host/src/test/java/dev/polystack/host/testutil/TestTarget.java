package dev.polystack.host.testutil;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Launcher;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Compiles the C test target once per JVM and starts it with stdout captured to a file. */
public final class TestTarget implements AutoCloseable {
  private static Path binary;

  public final ChildProcess process;
  public final Path stdout;
  public final Path dir;

  private TestTarget(ChildProcess process, Path stdout, Path dir) {
    this.process = process;
    this.stdout = stdout;
    this.dir = dir;
  }

  public static synchronized Path binary() {
    if (binary == null) {
      try {
        Path dir = Files.createTempDirectory("polystack-target");
        Path src = dir.resolve("target.c");
        try (InputStream in = TestTarget.class.getResourceAsStream("/native/target.c")) {
          Files.copy(in, src, StandardCopyOption.REPLACE_EXISTING);
        }
        Path out = dir.resolve("target");
        // ProcessBuilder is fine here: gcc is never traced.
        Process p =
            new ProcessBuilder("gcc", "-O1", "-g", "-pthread", "-o", out.toString(), src.toString())
                .inheritIO()
                .start();
        if (p.waitFor() != 0) {
          throw new IllegalStateException("gcc failed");
        }
        binary = out.toRealPath();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    return binary;
  }

  /**
   * Starts the target in a mode of target.c. The busy modes ({@code loop}, {@code threads N})
   * run until {@link #finish()} (their stop file is added here), or until close() kills them:
   * a test never has to finish inside a lifetime fixed in advance.
   */
  public static TestTarget start(String... args) throws Exception {
    Path dir = Files.createTempDirectory("polystack-run");
    Path out = dir.resolve("stdout");
    List<String> argv = new ArrayList<>();
    argv.add(binary().toString());
    argv.addAll(List.of(args));
    if (args.length > 0 && (args[0].equals("loop") || args[0].equals("threads"))) {
      argv.add(dir.resolve(STOP_FILE).toString());
    }
    ChildProcess p = Launcher.command(argv).stdout(out).start();
    return new TestTarget(p, out, dir);
  }

  private static final String STOP_FILE = "stop";

  /** Lets a busy target end by itself (its exit code and "done" line follow). */
  public void finish() throws IOException {
    Path stop = dir.resolve(STOP_FILE);
    if (!Files.exists(stop)) {
      Files.createFile(stop);
    }
  }

  public int pid() {
    return process.pid();
  }

  /** Waits for a stdout line starting with {@code prefix}; returns its key=value pairs. */
  public Map<String, String> awaitLine(String prefix, long timeoutMs) throws Exception {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (System.currentTimeMillis() < deadline) {
      if (Files.exists(stdout)) {
        for (String line : Files.readAllLines(stdout)) {
          if (line.startsWith(prefix)) {
            Map<String, String> kv = new HashMap<>();
            for (String tok : line.split(" ")) {
              int eq = tok.indexOf('=');
              if (eq > 0) {
                kv.put(tok.substring(0, eq), tok.substring(eq + 1));
              }
            }
            return kv;
          }
        }
      }
      Thread.sleep(5);
    }
    throw new AssertionError("no line '" + prefix + "' from target within " + timeoutMs + " ms");
  }

  public static long hex(String s) {
    return Long.parseUnsignedLong(s.startsWith("0x") ? s.substring(2) : s, 16);
  }

  /** Process state letter from /proc/PID/stat, or '?' if gone. */
  public static char state(int pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      return stat.charAt(stat.lastIndexOf(')') + 2);
    } catch (IOException e) {
      return '?';
    }
  }

  /** CPU time of {@code pid} so far (utime + stime), in clock ticks; -1 once it is gone. */
  public static long cpuTicks(int pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /**
   * Waits until {@code pid} has used {@code ticks} more clock ticks of CPU than now: it has run
   * that long, however busy the host is. Fails after {@code timeoutMs}.
   */
  public static void awaitMoreCpu(int pid, long ticks, long timeoutMs) throws Exception {
    long start = cpuTicks(pid);
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    while (cpuTicks(pid) < start + ticks) {
      if (System.nanoTime() > deadline || cpuTicks(pid) < 0) {
        throw new AssertionError("process " + pid + " did not use " + ticks + " ticks of CPU"
            + " within " + timeoutMs + " ms (state " + state(pid) + ")");
      }
      Thread.sleep(10);
    }
  }

  /** Waits until {@code pid} sleeps in system call {@code nr} (/proc/PID/syscall). */
  public static void awaitInSyscall(int pid, int nr, long timeoutMs) throws Exception {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    while (true) {
      try {
        String call = Files.readString(Path.of("/proc/" + pid + "/syscall")).trim();
        if (call.startsWith(nr + " ") && state(pid) == 'S') {
          return;
        }
      } catch (IOException e) {
        // not there yet, or gone: the deadline decides
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("process " + pid + " not asleep in system call " + nr
            + " within " + timeoutMs + " ms (state " + state(pid) + ")");
      }
      Thread.sleep(10);
    }
  }

  @Override
  public void close() {
    process.close();
  }

  /** /proc/PID/maps lines as (start, end, perms, path). */
  public record Mapping(long start, long end, String perms, String path) {
    public boolean contains(long addr) {
      return Long.compareUnsigned(addr, start) >= 0 && Long.compareUnsigned(addr, end) < 0;
    }
  }

  public static List<Mapping> maps(int pid) throws IOException {
    List<Mapping> out = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/maps"))) {
      String[] f = line.trim().split("\\s+", 6);
      String[] range = f[0].split("-");
      out.add(new Mapping(hex(range[0]), hex(range[1]), f[1], f.length > 5 ? f[5] : ""));
    }
    return out;
  }

  public static boolean inExecutableOf(int pid, long addr) throws IOException {
    String exe = binary().toString();
    for (Mapping m : maps(pid)) {
      if (m.path().equals(exe) && m.perms().contains("x") && m.contains(addr)) {
        return true;
      }
    }
    return false;
  }

  public static boolean inStack(int pid, long addr) throws IOException {
    for (Mapping m : maps(pid)) {
      if (m.path().equals("[stack]") && m.contains(addr)) {
        return true;
      }
    }
    return false;
  }

}
