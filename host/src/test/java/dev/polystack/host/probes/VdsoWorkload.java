package dev.polystack.host.probes;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/** Compiles native/vdso_workload.c once per JVM; parses what the workload says it observed. */
final class VdsoWorkload {
  /** One call as the workload saw it. */
  record Observed(int tid, String kind, int clockId, int result, long sec, long nsec) {}

  private static Path binary;

  private VdsoWorkload() {}

  static synchronized Path binary() {
    if (binary == null) {
      try {
        Path dir = Files.createTempDirectory("polystack-vdso");
        Path src = dir.resolve("vdso_workload.c");
        try (InputStream in = VdsoWorkload.class.getResourceAsStream("/native/vdso_workload.c")) {
          Files.copy(in, src, StandardCopyOption.REPLACE_EXISTING);
        }
        Path out = dir.resolve("vdso_workload");
        Process p = new ProcessBuilder("gcc", "-O1", "-Wall", "-Werror", "-pthread", "-o",
            out.toString(), src.toString(), "-ldl").inheritIO().start();
        if (p.waitFor() != 0) {
          throw new IllegalStateException("gcc failed on vdso_workload.c");
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

  static List<Observed> calls(Path stdout) throws IOException {
    List<Observed> out = new ArrayList<>();
    for (String line : Files.readAllLines(stdout)) {
      if (line.startsWith("CALL ")) {
        String[] f = line.split(" ");
        out.add(new Observed(Integer.parseInt(f[1]), f[2], Integer.parseInt(f[3]),
            Integer.parseInt(f[4]), Long.parseLong(f[5]), Long.parseLong(f[6])));
      }
    }
    return out;
  }

  static int usr1(Path stdout) throws IOException {
    for (String line : Files.readAllLines(stdout)) {
      if (line.startsWith("USR1 ")) {
        return Integer.parseInt(line.substring(5).trim());
      }
    }
    return -1;
  }

  /**
   * RUN_MS for a workload that calls until its stop file exists: a bound only, for a test that
   * dies before creating it (10 minutes).
   */
  static final String UNTIL_STOPPED_MS = "600000";

  /**
   * The workload's sleeps so far: its calling threads sleep 1 ms after each round, so this
   * counts rounds (voluntary context switches summed over /proc/PID/task; 0 once it is gone).
   */
  static long sleeps(int pid) throws IOException {
    long sum = 0;
    try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
      for (Path task : tasks.toList()) {
        try {
          for (String line : Files.readAllLines(task.resolve("status"))) {
            if (line.startsWith("voluntary_ctxt_switches:")) {
              sum += Long.parseLong(line.substring(line.indexOf(':') + 1).strip());
            }
          }
        } catch (IOException e) {
          // the thread ended meanwhile
        }
      }
    } catch (java.nio.file.NoSuchFileException e) {
      return 0;
    }
    return sum;
  }

  /** Waits until the workload has slept {@code rounds} more times (its threads call on). */
  static boolean awaitRounds(int pid, long rounds, long timeoutMillis)
      throws IOException, InterruptedException {
    long target = sleeps(pid) + rounds;
    long until = System.nanoTime() + timeoutMillis * 1_000_000L;
    while (sleeps(pid) < target) {
      if (System.nanoTime() > until) {
        return false;
      }
      Thread.sleep(10);
    }
    return true;
  }

  static boolean done(Path stdout) throws IOException {
    return Files.exists(stdout) && Files.readAllLines(stdout).contains("DONE");
  }
}
