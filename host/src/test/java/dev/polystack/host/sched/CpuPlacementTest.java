package dev.polystack.host.sched;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.polystack.host.sys.DiagnosticSwitches;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The JVM's threads moved off the target's CPUs and back, read back from the kernel. */
class CpuPlacementTest {
  /** Cpus_allowed_list of every thread of this JVM, by tid. */
  private static Map<Integer, String> allowedLists() throws IOException {
    Map<Integer, String> out = new HashMap<>();
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
      for (Path task : tasks) {
        try {
          for (String line : Files.readAllLines(task.resolve("status"))) {
            if (line.startsWith("Cpus_allowed_list:")) {
              out.put(Integer.parseInt(task.getFileName().toString()),
                  line.substring(line.indexOf(':') + 1).trim());
            }
          }
        } catch (IOException e) {
          // the thread exited meanwhile
        }
      }
    }
    return out;
  }

  /** CPUs in a list such as {@code 0-3,6}. */
  private static int cpuCount(String list) {
    int n = 0;
    for (String part : list.split(",")) {
      String[] range = part.trim().split("-");
      n += range.length == 1 ? 1 : Integer.parseInt(range[1]) - Integer.parseInt(range[0]) + 1;
    }
    return n;
  }

  private static String allowedListOfNewThread() throws Exception {
    CompletableFuture<String> f = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        String status = Files.readString(Path.of("/proc/thread-self/status"));
        f.complete(status.lines().filter(l -> l.startsWith("Cpus_allowed_list:"))
            .map(l -> l.substring(l.indexOf(':') + 1).trim()).findFirst().orElse("?"));
      } catch (IOException e) {
        f.completeExceptionally(e);
      }
    });
    t.start();
    return f.get(10, TimeUnit.SECONDS);
  }

  @Test
  void everyThreadLeavesTheTargetsCpuAndComesBack() throws Exception {
    // What the kernel lets this JVM use, read from outside the code under test.
    String allowed = allowedLists().get((int) ProcessHandle.current().pid());
    assumeTrue(cpuCount(allowed) >= 2, "needs two CPUs");
    CpuPlacement placement = CpuPlacement.forThisProcess();
    assertTrue(placement.enabled(), "this JVM may use CPUs " + allowed
        + ", yet placement is off");
    BitSet all = placement.current();
    int targetCpu = all.nextSetBit(0);
    BitSet left = (BitSet) all.clone();
    left.clear(targetCpu);
    String before = allowedLists().values().iterator().next();
    try {
      BitSet target = new BitSet();
      target.set(targetCpu);
      placement.targetRunsOn(target, 1_000_000_000L);
      assertEquals(left, placement.current());
      assertEquals(1, placement.repins());
      for (Map.Entry<Integer, String> e : allowedLists().entrySet()) {
        assertFalse(contains(e.getValue(), targetCpu),
            "thread " + e.getKey() + " still allowed on CPU " + targetCpu + ": " + e.getValue());
      }
      assertFalse(contains(allowedListOfNewThread(), targetCpu),
          "a thread started afterwards inherits the narrowed mask");

      // The same CPUs again: nothing to do. Every CPU: the JVM may not be squeezed out, it gets
      // its full mask back (but not sooner than the minimum interval after the last change).
      placement.targetRunsOn(target, 1_001_000_000L);
      assertEquals(1, placement.repins());
      placement.targetRunsOn(all, 1_001_000_000L);
      assertEquals(left, placement.current(), "within the interval nothing changes");
      placement.targetRunsOn(all, 1_000_000_000L + CpuPlacement.MIN_INTERVAL_NANOS);
      assertEquals(all, placement.current());
      assertEquals(2, placement.repins());
      placement.targetRunsOn(new BitSet(), 2_000_000_000L);
      assertEquals(all, placement.current(), "no running target thread changes nothing");

      placement.targetRunsOn(target, 3_000_000_000L);
      assertEquals(left, placement.current());
    } finally {
      placement.close();
    }
    assertEquals(all, placement.current());
    for (Map.Entry<Integer, String> e : allowedLists().entrySet()) {
      assertEquals(before, e.getValue(), "thread " + e.getKey() + " has its mask back");
    }
  }

  @Test
  void canBeSwitchedOffForComparison() {
    Properties off = new Properties();
    off.setProperty("polystack.cpuPlacement", "false");
    CpuPlacement placement = CpuPlacement.forThisProcess(DiagnosticSwitches.from(off));
    assertFalse(placement.enabled());
    BitSet target = new BitSet();
    target.set(0);
    placement.targetRunsOn(target, 1_000_000_000L);
    assertEquals(0, placement.repins());
    assertTrue(placement.current().get(0));
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
