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

  /** utime + stime of every thread, in clock ticks (USER_HZ, 100 on x86-64). */
  private static long cpuTicks(int pid) throws IOException {
    long sum = 0;
    try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
      for (Path t : tasks.toList()) {
        try {
          String stat = Files.readString(t.resolve("stat"));
          String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          sum += Long.parseLong(f[11]) + Long.parseLong(f[12]);
        } catch (IOException e) {
          // the thread exited meanwhile
        }
      }
    }
    return sum;
  }

  /** The CPU reading taken closest to {@code epochNanos}. */
  private static long ticksAt(List<long[]> readings, long epochNanos) {
    synchronized (readings) {
      long[] best = readings.get(0);
      for (long[] r : readings) {
        if (Math.abs(r[0] - epochNanos) < Math.abs(best[0] - epochNanos)) {
          best = r;
        }
      }
      return best[1];
    }
  }

  @Test
  void attachedTargetIsSampledOnBothThreadsAndNeverStopped() throws Exception {
    Path out = dir.resolve("attach.out");
    ChildProcess child = start(out, "0");
    AtomicBoolean traced = new AtomicBoolean();
    AtomicBoolean watching = new AtomicBoolean(true);
    List<long[]> cpu = Collections.synchronizedList(new ArrayList<>());
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
          cpu.add(new long[] {System.currentTimeMillis() * 1_000_000L, cpuTicks(child.pid())});
          Thread.sleep(10);
        } catch (IOException | InterruptedException e) {
          return;
        }
      }
    });
    watcher.start();
    try {
      long t0 = System.currentTimeMillis() * 1_000_000L;
      RecordSession.Result result = session().attach(child.pid(), RecordSession.Mode.PERF,
          options(2000), () -> false, (a, b, c, d) -> {});
      long t1 = System.currentTimeMillis() * 1_000_000L;
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
      // cpu-clock fires per RATE of CPU time, so on a busy host the wall rate is lower but the
      // rate per CPU second holds: compare with the CPU time the threads got while sampled.
      long first = samples.stream().mapToLong(Sample::epochNanos).min().orElseThrow();
      long last = samples.stream().mapToLong(Sample::epochNanos).max().orElseThrow();
      double cpuSeconds = (ticksAt(cpu, last) - ticksAt(cpu, first)) / 100.0;
      double perCpuSecond = samples.size() / cpuSeconds;
      System.out.printf("perf attach: %d samples, %.2f CPU s -> %.1f samples per CPU s"
          + " (rate %d), losses %s%n", samples.size(), cpuSeconds, perCpuSecond, RATE,
          result.summary().losses());
      assertTrue(perCpuSecond > 0.6 * RATE && perCpuSecond < 1.3 * RATE,
          perCpuSecond + " samples per CPU second at " + RATE + " Hz");
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
        options(10_000), () -> false, (a, b, c, d) -> {});
    long took = (System.nanoTime() - start) / 1_000_000;
    assertTrue(took < 5000, "ended with the target, not the duration: " + took + " ms");
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
