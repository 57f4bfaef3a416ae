package dev.polystack.e2e;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The kill-trial procedure shared by {@link KillDuringRecordTest} ({@code record}) and
 * {@link VdsoKillTest} ({@code vdso}): run trials a few at a time, pick the moment to signal
 * polystack, wait for the kernel to let go of the target's threads, and judge polystack's own
 * exit status. What counts as harm to the target stays with each test.
 */
final class KillTrials {
  private KillTrials() {
  }

  /** A check that may throw (reads /proc). */
  interface Condition {
    boolean holds() throws Exception;
  }

  /** One trial, given its index. */
  interface Trial<T> {
    T run(int n) throws Exception;
  }

  /** Runs {@code trials} trials, {@code parallel} at a time; results in trial order. */
  static <T> List<T> run(int trials, int parallel, Trial<T> trial) throws Exception {
    List<T> results = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(parallel);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int i = 0; i < trials; i++) {
        int n = i;
        Callable<T> task = () -> trial.run(n);
        futures.add(pool.submit(task));
      }
      for (Future<T> f : futures) {
        results.add(f.get());
      }
    } finally {
      pool.shutdownNow();
    }
    return results;
  }

  /**
   * Sleeps until the moment trial {@code n} kills polystack: in one trial of three a random
   * 0..{@code maxDelayMs} after polystack started (JVM start-up, attach and work); in the others
   * a random 0..{@code attachedDelayMs} after {@code attached} holds (waited for, polling every
   * {@code pollMs}, while polystack lives and at most 60 s).
   */
  static void awaitKillMoment(int n, Distribution.Running polystack, Condition attached,
      int pollMs, int maxDelayMs, int attachedDelayMs) throws Exception {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    if (n % 3 != 0) {
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (!attached.holds() && polystack.process().isAlive()
          && System.nanoTime() < deadline) {
        Thread.sleep(pollMs);
      }
      Thread.sleep(random.nextInt(attachedDelayMs + 1));
    } else {
      Thread.sleep(random.nextInt(maxDelayMs + 1));
    }
  }

  /**
   * The target's stopped threads once the kernel has let go of them after the tracer exited:
   * waits up to 2 s for the wake-ups; empty when none is left stopped.
   */
  static List<Reliability.TaskState> stoppedAfterRelease(int pid) throws Exception {
    List<Reliability.TaskState> stopped = Reliability.stoppedTasks(pid);
    for (int i = 0; i < 100 && !stopped.isEmpty(); i++) {
      Thread.sleep(20);
      stopped = Reliability.stoppedTasks(pid);
    }
    return stopped;
  }

  /**
   * polystack's own exit after SIG{@code signal}: 0 when it stopped cleanly, 128+N when the
   * signal came before its handlers were installed (JVM start-up) or was SIGKILL. Returns the
   * problem, or null when the exit is one of those.
   */
  static String exitProblem(int exit, String signal) {
    int sig = switch (signal) {
      case "INT" -> 2;
      case "TERM" -> 15;
      case "HUP" -> 1;
      default -> 9;
    };
    return exit != 0 && exit != 128 + sig ? "polystack exited " + exit + " after SIG" + signal
        : null;
  }
}
