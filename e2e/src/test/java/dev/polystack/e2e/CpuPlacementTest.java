package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * While recording, polystack's own threads (compiler, tracer, sample processor) keep off the CPU
 * that the sampled thread runs on when there are CPUs to spare, and keep every CPU when the
 * target uses them all: read back from the kernel's view of both processes.
 */
class CpuPlacementTest {

  @TempDir Path dir;

  @ParameterizedTest(name = "--mode {0}")
  @ValueSource(strings = {"ptrace", "perf", "bpf"})
  void polystacksThreadsLeaveTheSampledThreadsCpu(String mode) throws Exception {
    assumeTrue(Runtime.getRuntime().availableProcessors() >= 2, "needs two CPUs");
    Path out = dir.resolve("placed.folded");
    try (Target target = Target.start(Workloads.binary("two_threads"), "stdin");
        Distribution.Running polystack = Distribution.start(
            "record", "--mode", mode, "--pid", Integer.toString(target.pid()), "--tid",
            Integer.toString(target.pid()), "--format", "folded", "-o", out.toString())) {
      if (mode.equals("ptrace")) {
        target.awaitTraced(60_000);
      }
      // The sampled (main) thread may move between ticks; polystack follows within a tick or
      // two. Wanted: one moment where the thread stayed on one CPU and no polystack thread may
      // run there. (JVM start-up on a loaded 2-core host can take long.)
      long deadline = System.nanoTime() + 60_000_000_000L;
      String last = "";
      boolean seen = false;
      while (!seen && System.nanoTime() < deadline) {
        int before = cpuOf(target.pid(), target.pid());
        List<String> masks = allowedLists(polystack.pid());
        int after = cpuOf(target.pid(), target.pid());
        last = "target on CPU " + before + "/" + after + ", polystack threads " + masks;
        seen = before == after && before >= 0 && !masks.isEmpty()
            && masks.stream().noneMatch(m -> contains(m, before));
        Thread.sleep(50);
      }
      assertTrue(seen, "polystack's threads never left the sampled thread's CPU: " + last
          + "\n" + polystack.stderrSoFar());
      // Placement can be right before the first tick (a guess from where the threads last ran):
      // let the target run sampled a while so the record has samples.
      if (!mode.equals("ptrace")) {
        Awaits.until("perf events open", 60_000,
            () -> Reliability.holdsPerfEvents(polystack.pid()));
      }
      Awaits.cpuTicks(target.pid(), 20, 30_000);

      polystack.signal("INT");
      var result = polystack.await(20);
      RecordLaunchTest.assertSucceeded(result, out);
      assertTrue(Tools.total(Tools.folded(out)) > 0, result.stderr());
    }
  }

  /**
   * A target busy on every CPU leaves polystack every CPU: one busy thread per CPU this JVM may
   * use, so that the check runs on any number of CPUs, not only on two. (At nice -20 the target
   * would hold its CPUs on a busy host, but it starves polystack's own start as well.)
   */
  @Test
  void aTargetOnEveryCpuLeavesPolystackEveryCpu() throws Exception {
    int cpus = Runtime.getRuntime().availableProcessors();
    assumeTrue(cpus >= 2, "needs two CPUs");
    Path out = dir.resolve("all.folded");
    try (Target target = Target.start(Workloads.binary("busy_threads"),
            Integer.toString(cpus), "300");
        Distribution.Running polystack = Distribution.start(
            "record", "--pid", Integer.toString(target.pid()), "--format", "folded", "-o",
            out.toString())) {
      // The default mode (bpf) samples once its per-CPU events are open.
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (!Reliability.holdsPerfEvents(polystack.pid()) && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertTrue(Reliability.holdsPerfEvents(polystack.pid()), polystack.stderrSoFar());
      // Before the first sample polystack can only guess from where the threads last ran (both
      // may have shared one CPU a moment ago); the first ticks set it right: some CPU time of
      // the target's while sampled (~20 ticks a thread), then every CPU for every thread.
      Awaits.cpuTicks(target.pid(), 40, 30_000);
      String full = allowedLists(ProcessHandle.current().pid()).get(0);
      Awaits.until("every polystack thread allowed every CPU", 30_000,
          () -> allowedLists(polystack.pid()).stream().allMatch(full::equals));
      // Checked after windows in which the target really held every CPU (>= 90% of N x 250
      // ms of CPU, so no thread was off for longer than polystack's memory of a CPU): where it
      // did not (a busy host), leaving a CPU it does not use is right.
      int held = 0;
      int windows = 0;
      while (held < 8 && windows < 120) {
        windows++;
        long before = Awaits.cpuTicks(target.pid());
        Thread.sleep(250);
        long used = Awaits.cpuTicks(target.pid()) - before;
        List<String> masks = allowedLists(polystack.pid());
        if (used < 45 * cpus / 2) { // clock ticks of 10 ms: 90% of 25 per CPU
          continue;
        }
        held++;
        for (String mask : masks) {
          assertEquals(full, mask, "a polystack thread lost a CPU while the target used "
              + used + " of " + 25 * cpus + " ticks");
        }
      }
      assumeTrue(held >= 8, "inconclusive: the host was too busy for the target to hold every"
          + " CPU (" + held + " of " + windows + " windows)");
      polystack.signal("INT");
      RecordLaunchTest.assertSucceeded(polystack.await(20), out);
    }
  }

  /** The CPU a thread last ran on: field 39 of its stat. */
  private static int cpuOf(int pid, int tid) {
    try {
      String stat = Files.readString(Path.of("/proc", Integer.toString(pid), "task",
          Integer.toString(tid), "stat"));
      String[] after = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return Integer.parseInt(after[39 - 3]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** Cpus_allowed_list of every thread of a process. */
  private static List<String> allowedLists(long pid) throws IOException {
    List<String> out = new ArrayList<>();
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(
        Path.of("/proc", Long.toString(pid), "task"))) {
      for (Path task : tasks) {
        try {
          for (String line : Files.readAllLines(task.resolve("status"))) {
            if (line.startsWith("Cpus_allowed_list:")) {
              out.add(line.substring(line.indexOf(':') + 1).trim());
            }
          }
        } catch (IOException e) {
          // the thread exited meanwhile
        }
      }
    }
    return out;
  }

  /** Whether a list such as "0-1,3" names {@code cpu}. */
  private static boolean contains(String list, int cpu) {
    for (String part : list.split(",")) {
      String[] range = part.trim().split("-");
      int lo = Integer.parseInt(range[0]);
      int hi = range.length > 1 ? Integer.parseInt(range[1]) : lo;
      if (cpu >= lo && cpu <= hi) {
        return true;
      }
    }
    return false;
  }
}
