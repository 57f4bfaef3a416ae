package dev.polystack.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Shared pieces of the reliability tests (docs/reliability.md): trial counts and durations from
 * system properties (CI defaults small, full runs pass e.g. {@code -Dreliability.trials=59}),
 * per-thread state of a target, and a summary file per test under e2e/target/reliability/.
 */
final class Reliability {
  private Reliability() {}

  /** An int system property, e.g. reliability.trials. */
  static int intProperty(String name, int ciDefault) {
    String v = System.getProperty(name);
    return v == null || v.isBlank() ? ciDefault : Integer.parseInt(v.strip());
  }

  /**
   * Trials per combination: -Dreliability.trials (CI default {@code ciDefault}). A race that
   * hits a fraction f of kills shows in N trials with probability 1 - (1 - f)^N: CI's 3 find a
   * 5% race 14% of the time and a 63% race 95% of the time; {@link #TRIALS_FOR_5_PERCENT} (59)
   * find a 5% race with 95% confidence, the nightly-sized run. Printed with each test's count.
   */
  static int trials(int ciDefault) {
    int n = intProperty("reliability.trials", ciDefault);
    System.out.printf("kill trials: %d per case: a race hitting 5%% of kills is caught with"
        + " probability %.2f; 95%% confidence catches races above %.0f%% of kills"
        + " (-Dreliability.trials=%d for 5%%)%n", n, 1 - Math.pow(0.95, n),
        100 * (1 - Math.pow(0.05, 1.0 / n)), TRIALS_FOR_5_PERCENT);
    return n;
  }

  /** Trials that catch a race hitting 5% of kills with 95% confidence: ln 0.05 / ln 0.95. */
  static final int TRIALS_FOR_5_PERCENT =
      (int) Math.ceil(Math.log(0.05) / Math.log(0.95));

  /** One thread of a process: its id, name and state letter from /proc/PID/task/TID/stat. */
  record TaskState(int tid, String name, char state) {
    boolean stopped() {
      return state == 't' || state == 'T';
    }
  }

  /** The threads of {@code pid} and their states; empty once the process is gone. */
  static List<TaskState> tasks(int pid) {
    List<TaskState> tasks = new ArrayList<>();
    try (DirectoryStream<Path> dir = Files.newDirectoryStream(Path.of("/proc/" + pid + "/task"))) {
      for (Path task : dir) {
        String stat;
        try {
          stat = Files.readString(task.resolve("stat"));
        } catch (NoSuchFileException e) {
          continue; // the thread ended meanwhile
        }
        int open = stat.indexOf('(');
        int close = stat.lastIndexOf(')');
        tasks.add(new TaskState(Integer.parseInt(task.getFileName().toString()),
            stat.substring(open + 1, close), stat.charAt(close + 2)));
      }
    } catch (NoSuchFileException e) {
      return List.of();
    } catch (IOException e) {
      throw new AssertionError("cannot read /proc/" + pid + "/task: " + e, e);
    }
    return tasks;
  }

  /** The threads of {@code pid} left in a stopped or traced state (State t or T). */
  static List<TaskState> stoppedTasks(int pid) {
    return tasks(pid).stream().filter(TaskState::stopped).toList();
  }

  /** True if process {@code pid} holds a perf_event file descriptor. */
  static boolean holdsPerfEvents(long pid) {
    try (DirectoryStream<Path> dir = Files.newDirectoryStream(Path.of("/proc/" + pid + "/fd"))) {
      for (Path fd : dir) {
        try {
          if (Files.readSymbolicLink(fd).toString().contains("perf_event")) {
            return true;
          }
        } catch (IOException e) {
          // closed meanwhile
        }
      }
    } catch (IOException e) {
      return false;
    }
    return false;
  }

  /** The ids of the BPF programs process {@code pid} holds (its fds' fdinfo "prog_id"). */
  static Set<Integer> bpfProgramIds(long pid) {
    Set<Integer> ids = new TreeSet<>();
    try (DirectoryStream<Path> dir = Files.newDirectoryStream(Path.of("/proc/" + pid
        + "/fdinfo"))) {
      for (Path fd : dir) {
        try {
          for (String line : Files.readAllLines(fd)) {
            if (line.startsWith("prog_id:")) {
              ids.add(Integer.parseInt(line.substring("prog_id:".length()).strip()));
            }
          }
        } catch (IOException e) {
          // closed meanwhile
        }
      }
    } catch (IOException e) {
      return ids;
    }
    return ids;
  }

  /**
   * Of {@code ids}, the BPF programs still loaded 2 s after their holder died (the kernel frees
   * a program once the last perf event using it is gone, not always at once).
   */
  static Set<Integer> bpfProgramsLeft(Set<Integer> ids) throws Exception {
    Set<Integer> left = new TreeSet<>(ids);
    long deadline = System.nanoTime() + 2_000_000_000L;
    while (!left.isEmpty()) {
      left.removeIf(id -> {
        try {
          return Tools.run(30, null, List.of("bpftool", "prog", "show", "id",
              Integer.toString(id))).exitCode() != 0;
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      });
      if (left.isEmpty() || System.nanoTime() > deadline) {
        break;
      }
      Thread.sleep(50);
    }
    return left;
  }

  /** Writes {@code text} to e2e/target/reliability/{@code name}.txt (replacing it), prints it. */
  static void report(String name, String text) {
    System.out.println("[reliability] " + name + ": " + text);
    try {
      Path dir = Distribution.root().resolve("e2e/target/reliability");
      Files.createDirectories(dir);
      Files.writeString(dir.resolve(name + ".txt"), text + System.lineSeparator(),
          StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
          StandardOpenOption.WRITE);
    } catch (IOException e) {
      System.out.println("[reliability] cannot write the report file: " + e);
    }
  }
}
