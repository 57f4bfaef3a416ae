package dev.polystack.host.ptrace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.sys.DiagnosticSwitches;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The tracer's real-time spell, read back from the kernel's view of the thread. */
class HoldPriorityTest {
  /** Scheduling policy of the calling thread: field 41 of /proc/thread-self/stat. */
  private static int policy() throws IOException {
    String stat = Files.readString(Path.of("/proc/thread-self/stat"));
    String[] after = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Integer.parseInt(after[41 - 3]); // after[0] is field 3 (state)
  }

  private static <T> T onNewThread(java.util.concurrent.Callable<T> body) throws Exception {
    CompletableFuture<T> f = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        f.complete(body.call());
      } catch (Throwable e) {
        f.completeExceptionally(e);
      }
    });
    t.start();
    return f.get(10, TimeUnit.SECONDS);
  }

  @Test
  void holdMakesTheThreadFifoAndReleaseMakesItNormalAgain() throws Exception {
    // The suite runs as root (CAP_SYS_NICE), as polystack does.
    String trace = onNewThread(() -> {
      HoldPriority h = HoldPriority.forCurrentThread();
      StringBuilder sb = new StringBuilder().append(policy());
      boolean held = h.hold();
      sb.append(' ').append(held).append(' ').append(policy()).append(' ').append(h.held());
      assertTrue(h.hold(), "a second hold is a no-op that still reports held");
      h.release();
      sb.append(' ').append(policy()).append(' ').append(h.held());
      h.release(); // twice is harmless
      sb.append(' ').append(policy());
      return sb.toString();
    });
    assertEquals("0 true 1 true 0 false 0", trace, "policy, hold, policy, held, then released");
  }

  @Test
  void currentCpuIsOneOfTheMachinesCpus() throws Exception {
    int cpu = onNewThread(() -> HoldPriority.forCurrentThread().currentCpu());
    assertTrue(cpu >= 0 && cpu < Runtime.getRuntime().availableProcessors(), "cpu " + cpu);
  }

  @Test
  void onlyItsOwnThreadMayUseIt() throws Exception {
    HoldPriority h = onNewThread(HoldPriority::forCurrentThread);
    assertThrows(IllegalStateException.class, h::hold);
    assertThrows(IllegalStateException.class, h::release);
    assertFalse(h.held());
  }

  @Test
  void canBeSwitchedOffForComparison() throws Exception {
    Properties off = new Properties();
    off.setProperty("polystack.holdPriority", "false");
    String trace = onNewThread(() -> {
      HoldPriority h = HoldPriority.forCurrentThread(DiagnosticSwitches.from(off));
      return h.hold() + " " + policy();
    });
    assertEquals("false 0", trace);
  }
}
