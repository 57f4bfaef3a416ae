package dev.polystack.host.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.plugin.api.Frame;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code record --mode perf} against a real kernel and a C workload built for the test. */
class PerfModeTest {
  private static final int RATE = 199;
  /** How far a sample's time (CLOCK_MONOTONIC plus an offset taken once) may be off epoch. */
  private static final long CLOCK_SLACK_NANOS = 5_000_000L;
  /**
   * Each of the rate check's two tails fails by chance with at most this probability (1 in
   * 10^4 runs for the pair; docs/testing.md, "Bounds and their false-failure rates").
   */
  private static final double RATE_ALPHA = 5e-5;

  @TempDir static Path dir;
  private static Path workload;

  @BeforeAll
  static void compile() throws Exception {
    Path src = dir.resolve("perf_chains.c");
    try (InputStream in = PerfModeTest.class.getResourceAsStream("/native/perf_chains.c")) {
      Files.copy(in, src);
    }
    workload = dir.resolve("perf_chains");
    // ProcessBuilder is fine here: gcc is never sampled.
    Process gcc = new ProcessBuilder("gcc", "-O2", "-fomit-frame-pointer", "-g", "-pthread",
        "-o", workload.toString(), src.toString()).inheritIO().start();
    assertEquals(0, gcc.waitFor(), "gcc");
  }

  private static RecordSession session() throws Exception {
    var plugins = new PluginLoader().load(List.of());
    return new RecordSession(ProcFs.system(), plugins, new PluginGuard(msg -> {}), msg -> {});
  }

  private static SamplingOptions options(long millis) {
    return new SamplingOptions(RATE, millis * 1_000_000L, false, Set.of(),
        SamplingOptions.DEFAULT_MAX_DEPTH, SamplingOptions.DEFAULT_STACK_BYTES);
  }

  private static ChildProcess start(Path stdout, String... args) throws Exception {
    List<String> argv = new ArrayList<>(List.of(workload.toString()));
    argv.addAll(List.of(args));
    ChildProcess child = Launcher.command(argv).stdout(stdout).start();
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (!Files.readString(stdout).contains("ready")) {
      assertTrue(System.nanoTime() < deadline, "workload never got ready");
      Thread.sleep(5);
    }
    return child;
  }

  private static List<String> names(Sample s) {
    return s.stack().frames().stream().map(Frame::function).toList();
  }

  /** Share of samples whose stack starts with {@code leaf} that carry exactly {@code chain}. */
  private static void assertChain(List<Sample> samples, List<String> chain) {
    List<Sample> withLeaf = samples.stream()
        .filter(s -> !s.stack().frames().isEmpty() && chain.get(0).equals(names(s).get(0)))
        .toList();
    // The host is shared: a thread may get a fraction of a CPU, and cpu-clock samples only
    // while it runs, so counts are kept low; the rate is checked against CPU time instead.
    assertTrue(withLeaf.size() >= 15, "too few " + chain.get(0) + " samples: " + withLeaf.size());
    long full = withLeaf.stream()
        .filter(s -> names(s).size() >= chain.size()
            && names(s).subList(0, chain.size()).equals(chain))
        .count();
    assertTrue(full >= 0.9 * withLeaf.size(), full + " of " + withLeaf.size() + " carry " + chain
        + "; e.g. " + names(withLeaf.get(0)));
  }

  /** Time on a CPU of every thread so far, in ns (first field of each task's schedstat). */
  private static long cpuNanos(int pid) throws IOException {
    long sum = 0;
    try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
      for (Path t : tasks.toList()) {
        try {
          sum += Long.parseLong(Files.readString(t.resolve("schedstat")).split(" ")[0]);
        } catch (IOException e) {
          // the thread exited meanwhile (this workload's threads do not)
        }
      }
    }
    return sum;
  }

  /** A reading of the target's CPU time, taken at some moment between two epoch times. */
  private record CpuReading(long afterEpochNanos, long cpuNanos, long beforeEpochNanos) {}

  private static long epochNanos() {
    java.time.Instant now = java.time.Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  /**
   * The CPU time the target surely used between two moments (readings taken wholly inside)
   * and the most it may have used (readings wholly outside), each moment widened by
   * {@link #CLOCK_SLACK_NANOS}; {@code null} when no reading lies inside.
   */
  private static long[] cpuBetween(List<CpuReading> readings, long from, long to) {
    CpuReading outerStart = null;
    CpuReading innerStart = null;
    CpuReading innerEnd = null;
    CpuReading outerEnd = null;
    synchronized (readings) {
      for (CpuReading r : readings) {
        if (r.beforeEpochNanos() <= from - CLOCK_SLACK_NANOS) {
          outerStart = r;
        }
        if (innerStart == null && r.afterEpochNanos() >= from + CLOCK_SLACK_NANOS) {
          innerStart = r;
        }
        if (r.beforeEpochNanos() <= to - CLOCK_SLACK_NANOS) {
          innerEnd = r;
        }
        if (outerEnd == null && r.afterEpochNanos() >= to + CLOCK_SLACK_NANOS) {
          outerEnd = r;
        }
      }
    }
    assertNotNull(outerStart, "a CPU reading before the first sample");
    assertNotNull(outerEnd, "a CPU reading after the last sample");
    long least = innerStart == null || innerEnd == null
        || innerEnd.cpuNanos() < innerStart.cpuNanos() ? 0
        : innerEnd.cpuNanos() - innerStart.cpuNanos();
    return new long[] {least, outerEnd.cpuNanos() - outerStart.cpuNanos()};
  }

  /** P(Poisson(lambda) < k) <= alpha for the largest such k: fewer than k fail by chance. */
  static long poissonLower(double lambda, double alpha) {
    double below = 0;
    for (long k = 0; ; k++) {
      double p = poissonPmf(lambda, k);
      if (below + p > alpha) {
        return k;
      }
      below += p;
    }
  }

  /** P(Poisson(lambda) > k) <= alpha for the smallest such k: more than k fail by chance. */
  static long poissonUpper(double lambda, double alpha) {
    double atMost = 0;
    for (long k = 0; ; k++) {
      atMost += poissonPmf(lambda, k);
      if (1 - atMost <= alpha) {
        return k;
      }
    }
  }

  private static double poissonPmf(double lambda, long k) {
    if (lambda <= 0) {
      return k == 0 ? 1 : 0;
    }
    double log = -lambda + k * Math.log(lambda);
    for (long i = 2; i <= k; i++) {
      log -= Math.log(i);
    }
    return Math.exp(log);
  }

  @Test
  void attachedTargetIsSampledOnBothThreadsAndNeverStopped() throws Exception {
    Path out = dir.resolve("attach.out");
    ChildProcess child = start(out, "0");
    AtomicBoolean traced = new AtomicBoolean();
    AtomicBoolean watching = new AtomicBoolean(true);
    List<CpuReading> cpu = Collections.synchronizedList(new ArrayList<>());
    Thread watcher = new Thread(() -> {
      while (watching.get()) {
        try {
          for (String line : Files.readAllLines(Path.of("/proc/" + child.pid() + "/status"))) {
            if (line.startsWith("TracerPid:") && !line.endsWith("\t0")) {
              traced.set(true);
            }
            if (line.startsWith("State:") && line.contains("(stopped)")) {
              traced.set(true);
            }
          }
          long before = epochNanos();
          long cpuNow = cpuNanos(child.pid());
          cpu.add(new CpuReading(before, cpuNow, epochNanos()));
          Thread.sleep(10);
        } catch (IOException | InterruptedException e) {
          return;
        }
      }
    });
    watcher.start();
    try {
      // A CPU reading wholly before the run's first sample bounds its CPU time from above: on a
      // busy machine the watcher's first reading could otherwise come after the first sample.
      long ready = System.nanoTime() + 10_000_000_000L;
      while (cpu.isEmpty() || epochNanos() - cpu.get(0).beforeEpochNanos()
          < 2 * CLOCK_SLACK_NANOS) {
        assertTrue(System.nanoTime() < ready && watcher.isAlive(), "no CPU reading");
        Thread.sleep(1);
      }
      long t0 = System.currentTimeMillis() * 1_000_000L;
      RecordSession.Result result = session().attach(child.pid(), RecordSession.Mode.PERF,
          options(2000), () -> false, (a, b, c, d) -> {});
      long t1 = System.currentTimeMillis() * 1_000_000L;
      // A CPU reading wholly after the run's last sample bounds its CPU time from above.
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (cpu.isEmpty() || cpu.get(cpu.size() - 1).afterEpochNanos()
          < t1 + 2 * CLOCK_SLACK_NANOS) {
        assertTrue(System.nanoTime() < deadline && watcher.isAlive(), "CPU readings stopped");
        Thread.sleep(5);
      }
      watching.set(false);
      watcher.join();
      assertTrue(!traced.get(), "target was traced or stopped during the run");
      assertTrue(Files.exists(Path.of("/proc/" + child.pid())), "target still runs");

      Recording rec = result.recording();
      assertEquals("perf", rec.mode());
      assertEquals(null, result.targetExit());
      assertTrue(!result.targetGone());
      assertEquals(0, result.summary().meanPauseNanos());
      List<Sample> samples = rec.samples();
      Map<Integer, Long> perTid = samples.stream()
          .collect(Collectors.groupingBy(Sample::tid, Collectors.counting()));
      assertEquals(2, perTid.size(), "threads: " + perTid);
      assertTrue(perTid.containsKey(child.pid()), "main thread sampled: " + perTid);
      assertTrue(samples.stream().anyMatch(s -> s.threadName().equals("worker-b")),
          "worker-b named");
      for (Sample s : samples) {
        assertTrue(s.epochNanos() >= t0 - 50_000_000L && s.epochNanos() <= t1 + 50_000_000L,
            "sample time within the run: " + s.epochNanos() + " not in " + t0 + ".." + t1);
      }
      assertChain(samples, List.of("leaf_a", "mid_a", "top_a", "main"));
      assertChain(samples, List.of("leaf_b", "mid_b", "top_b", "worker"));
      // cpu-clock fires every 1/RATE s of a thread's CPU time, so on a busy host the wall rate
      // is lower but the rate per CPU second holds. The CPU time the threads used between the
      // first and the last sample lies between what readings inside and outside that span
      // show; the ticks due in it are modelled as Poisson (a timer of fixed period in CPU time
      // varies less: conservative), plus one per thread for the span's ends.
      long first = samples.stream().mapToLong(Sample::epochNanos).min().orElseThrow();
      long last = samples.stream().mapToLong(Sample::epochNanos).max().orElseThrow();
      long[] cpuNs = cpuBetween(cpu, first, last);
      long low = poissonLower(RATE * cpuNs[0] / 1e9, RATE_ALPHA);
      long high = poissonUpper(RATE * cpuNs[1] / 1e9, RATE_ALPHA) + perTid.size();
      System.out.printf("perf attach: %d samples, %.3f..%.3f CPU s -> %d..%d due at %d Hz,"
          + " losses %s%n", samples.size(), cpuNs[0] / 1e9, cpuNs[1] / 1e9, low, high, RATE,
          result.summary().losses());
      assertTrue(samples.size() >= low && samples.size() <= high, samples.size()
          + " samples where the threads' " + cpuNs[0] / 1e9 + ".." + cpuNs[1] / 1e9
          + " CPU s hold " + low + ".." + high + " ticks at " + RATE + " Hz");
    } finally {
      watching.set(false);
      child.close();
    }
  }

  @Test
  void launchedTargetExitsByItselfAndItsExitCodeIsReported() throws Exception {
    List<String> command = List.of(workload.toString(), "1", "3");
    long start = System.nanoTime();
    RecordSession.Result result = session().launch(command, RecordSession.Mode.PERF,
        options(60_000), () -> false, (a, b, c, d) -> {});
    long took = (System.nanoTime() - start) / 1_000_000;
    // The target exits after 1 s of its threads' CPU time, which a loaded host stretches.
    assertTrue(took < 30_000, "ended with the target, not the duration: " + took + " ms");
    assertNotNull(result.targetExit(), "exit status collected");
    assertTrue(result.targetExit().exited(), result.targetExit().toString());
    assertEquals(3, result.targetExit().exitCode());
    assertTrue(result.targetGone());
    assertEquals("perf", result.recording().mode());
    // The events exist from the exec on, so the run starts with samples.
    assertChain(result.recording().samples(), List.of("leaf_a", "mid_a", "top_a", "main"));
  }

  @Test
  void threadsCreatedDuringTheRecordAreFollowed() throws Exception {
    Path out = dir.resolve("late.out");
    ChildProcess child = start(out, "0", "0", "500");
    try {
      RecordSession.Result result = session().attach(child.pid(), RecordSession.Mode.PERF,
          options(1500), () -> false, (a, b, c, d) -> {});
      List<Sample> late = result.recording().samples().stream()
          .filter(s -> s.threadName().equals("late-c"))
          .toList();
      assertTrue(late.size() >= 15, "late thread sampled: " + late.size());
      Set<Integer> tids = late.stream().map(Sample::tid).collect(Collectors.toSet());
      assertEquals(1, tids.size());
      assertChain(late, List.of("leaf_c", "top_c", "late"));
    } finally {
      child.close();
    }
  }
}
