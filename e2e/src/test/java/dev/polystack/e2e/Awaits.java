package dev.polystack.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Conditions the tests wait for instead of sleeping a fixed time: a process blocked in a given
 * system call, a process that has run for some CPU time, threads that exist under their names.
 * Each fails with what it saw when the condition does not come within its limit.
 */
final class Awaits {
  /** System call numbers (x86-64) the tests wait in. */
  static final int READ = 0;
  static final int NANOSLEEP = 35;
  static final int CLOCK_NANOSLEEP = 230;

  private Awaits() {}

  /** A check that may throw (reads /proc). */
  interface Condition {
    boolean holds() throws Exception;
  }

  /** Polls {@code condition} every 10 ms for up to {@code millis}; fails with {@code what}. */
  static void until(String what, long millis, Condition condition) throws Exception {
    long deadline = System.nanoTime() + millis * 1_000_000L;
    while (!condition.holds()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError(what + " did not happen within " + millis + " ms");
      }
      Thread.sleep(10);
    }
  }

  /**
   * Until process {@code pid} is blocked in one of {@code syscalls} (its main thread's
   * /proc/PID/syscall): past its loader and start-up, where the test wants it.
   */
  static void blockedIn(long pid, Set<Integer> syscalls, long millis) throws Exception {
    until("process " + pid + " blocked in syscall " + syscalls + " (now: " + syscall(pid) + ")",
        millis, () -> {
          String[] f = syscall(pid).split(" ");
          return f.length > 1 && f[0].matches("\\d+") && syscalls.contains(Integer.parseInt(f[0]));
        });
  }

  private static String syscall(long pid) {
    try {
      return Files.readString(Path.of("/proc/" + pid + "/syscall")).strip();
    } catch (IOException e) {
      return "gone";
    }
  }

  /** Until process {@code pid} has used {@code ticks} more clock ticks of CPU than now. */
  static void cpuTicks(long pid, long ticks, long millis) throws Exception {
    long start = cpuTicks(pid);
    until("process " + pid + " using " + ticks + " ticks of CPU", millis,
        () -> cpuTicks(pid) >= start + ticks);
  }

  /** utime + stime of /proc/PID/stat, in clock ticks; -1 once the process is gone. */
  static long cpuTicks(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    } catch (IOException e) {
      return -1;
    }
  }

  /** Until process {@code pid} has threads with each of {@code names}. */
  static void threadsNamed(long pid, Set<String> names, long millis) throws Exception {
    until("threads " + names + " in process " + pid, millis,
        () -> Reliability.tasks(Math.toIntExact(pid)).stream().map(Reliability.TaskState::name)
            .collect(Collectors.toSet()).containsAll(names));
  }
}
