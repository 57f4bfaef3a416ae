package dev.polystack.e2e;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

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
   * When one trial kills polystack: {@code afterAttach} trials wait for polystack to be attached
   * and then {@code delayMs}; the others wait {@code delayMs} from polystack's start (JVM
   * start-up, attach and work alike).
   */
  record KillMoment(int trial, boolean afterAttach, int delayMs) {
    @Override
    public String toString() {
      return "#" + trial + (afterAttach ? " attached+" : " start+") + delayMs + "ms";
    }
  }

  /**
   * The kill moments of {@code trials} trials, drawn from {@code seed}: in one trial of three
   * 0..{@code maxDelayMs} after polystack started, in the others 0..{@code attachedDelayMs}
   * after it attached. The seed is -Dreliability.seed when given (to replay a failure: the
   * report prints it with every moment), else fresh.
   */
  static List<KillMoment> moments(long seed, int trials, int maxDelayMs, int attachedDelayMs) {
    Random random = new Random(seed);
    List<KillMoment> moments = new ArrayList<>();
    for (int n = 0; n < trials; n++) {
      boolean afterAttach = n % 3 != 0;
      moments.add(new KillMoment(n, afterAttach,
          random.nextInt((afterAttach ? attachedDelayMs : maxDelayMs) + 1)));
    }
    return moments;
  }

  /** -Dreliability.seed, else a fresh one; either way printed with the trials' report. */
  static long seed() {
    String given = System.getProperty("reliability.seed");
    return given == null || given.isBlank() ? new Random().nextLong() : Long.parseLong(given.strip());
  }

  /**
   * Sleeps until {@code moment}: for an after-attach moment, first until {@code attached}
   * holds (polled every {@code pollMs} while polystack lives, at most 60 s). Returns whether
   * polystack was attached when the wait ended, which an after-attach trial must see.
   */
  static boolean awaitKillMoment(KillMoment moment, Distribution.Running polystack,
      Condition attached, int pollMs) throws Exception {
    if (moment.afterAttach()) {
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (!attached.holds() && polystack.process().isAlive()
          && System.nanoTime() < deadline) {
        Thread.sleep(pollMs);
      }
    }
    Thread.sleep(moment.delayMs());
    return attached.holds();
  }

  /**
   * The problem of an after-attach trial whose polystack was not attached at the kill (it
   * exited, or never attached within 60 s): the trial then tested start-up, not what it claims.
   */
  static String notAttachedProblem(KillMoment moment, boolean attachedAtKill) {
    return moment.afterAttach() && !attachedAtKill
        ? moment + ": polystack was not attached when killed" : null;
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
  static String exitProblem(int exit, String signal, boolean attached) {
    if (attached && !signal.equals("KILL") && exit != 0) {
      // Its handlers are installed before it attaches: a stop signal then must end it cleanly.
      return "polystack exited " + exit + " after SIG" + signal + " while attached";
    }
    return exitProblem(exit, signal);
  }

  /** As {@link #exitProblem(int, String, boolean)} when it is not known whether it attached. */
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
