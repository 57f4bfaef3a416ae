package dev.polystack.host.sampling.nostop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.TickCapture;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** One capture for two real busy processes: each share sees its own process's ticks only. */
class SharedCaptureTest {

  @Test
  void eachShareGetsItsOwnProcessesRecords() throws Exception {
    String disabled = System.getenv(BpfSupport.DISABLE_ENV);
    assumeTrue(disabled == null || disabled.isEmpty(), "BPF disabled by the environment");
    assumeTrue(BpfSupport.unavailableReason().isEmpty(), "BPF unavailable here");
    Process a = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
    Process b = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
    try (SharedCapture shared = new SharedCapture(TickCapture.open(199, 1 << 22))) {
      CaptureSource sa = shared.share();
      CaptureSource sb = shared.share();
      int pa = (int) a.pid();
      int pb = (int) b.pid();
      sa.addTarget(pa, 4096);
      sb.addTarget(pb, 4096);
      List<CaptureRecord> ra = new ArrayList<>();
      List<CaptureRecord> rb = new ArrayList<>();
      // Each busy loop gets ticks as it gets CPU; a loaded host gives it less, not none.
      long deadline = System.nanoTime() + 30_000_000_000L;
      while ((ra.size() < 20 || rb.size() < 20) && System.nanoTime() < deadline) {
        sa.poll(20, ra::add, () -> { });
        sb.poll(20, rb::add, () -> { });
      }
      sa.removeTarget(pa);
      sb.removeTarget(pb);
      assertTrue(ra.size() >= 20 && rb.size() >= 20, ra.size() + " and " + rb.size());
      assertTrue(ra.stream().allMatch(r -> r.tgid() == pa), "a's share holds only a's ticks");
      assertTrue(rb.stream().allMatch(r -> r.tgid() == pb), "b's share holds only b's ticks");
      assertEquals(Map.of("ring_full", 0L), sa.counters(), "read in time: nothing dropped");
      assertEquals(0, shared.malformed());
      assertTrue(shared.counters().get("records") >= ra.size() + rb.size(),
          shared.counters().toString());
    } finally {
      a.destroyForcibly();
      b.destroyForcibly();
      a.waitFor();
      b.waitFor();
    }
  }
}
