package dev.polystack.host.sampling.nostop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.PlanEncoder;
import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.sampling.CapturedThread;
import dev.polystack.host.testutil.TestTarget;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CapturedRegion;
import dev.polystack.plugin.api.PlanOutcome;
import dev.polystack.plugin.api.Registers;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What a walk sees of the tick (API 1.6) in bpf mode, from records a real process's ticks wrote:
 * the thread pointer, and per plan whether it ran to its end or where and why it stopped, with
 * the regions it copied.
 */
class PlanOutcomesTest {
  /** glibc's tcbhead_t.self: the thread pointer points at a word holding itself. */
  private static final int TCB_SELF = 0x10;

  @Test
  void aWalkSeesTheThreadPointerAndEachPlansOutcome() throws Exception {
    assertEquals(Optional.empty(), BpfSupport.unavailableReason());
    CapturePlan self = CapturePlan.builder()
        .threadPointer("tp")
        .copy("tp", TCB_SELF, 8, "tcb_self")
        .build();
    CapturePlan failing = CapturePlan.builder()
        .constant("one", 1)
        .constant("two", 2)
        .checkEquals("one", "two")
        .copy("one", 0, 8, "never")
        .build();
    CapturePlan neverInstalled = CapturePlan.builder().constant("x", 3).build();
    try (TestTarget t = TestTarget.start("loop");
        TickCapture capture = TickCapture.open(499, 1 << 20)) {
      t.awaitLine("ready", 5000);
      int pid = t.pid();
      capture.setPlan(pid, 0, PlanEncoder.encode(self));
      capture.setPlan(pid, 1, PlanEncoder.encode(failing));
      capture.addTarget(pid, 4096);
      List<CaptureRecord> records = collect(capture, 20);
      for (CaptureRecord r : records) {
        CapturedThread thread = new CapturedThread(pid, r.tid(), Registers.of(r.regs()),
            new TickMemory(r, ProcessMemory.of(pid),
                  TickMemory.stablePages(ProcessMemory.of(pid), new LastLivePages())), r.stackStart(),
            r.stack().length, r.threadPointer(),
            PlanOutcomes.of(r, List.of(self, failing)));
        long tp = thread.threadPointer().orElseThrow();

        PlanOutcome ran = thread.planOutcome(self).orElseThrow();
        assertTrue(ran.completed(), ran.toString());
        assertEquals(-1, ran.stoppedAtStep());
        CapturedRegion region = ran.regions().get(0);
        assertEquals(new CapturedRegion(tp + TCB_SELF, 8, 1, "tcb_self"), region);
        assertEquals(tp, thread.memory().readLong(region.address()), "tcbhead_t.self");

        PlanOutcome stopped = thread.planOutcome(failing).orElseThrow();
        assertEquals(PlanOutcome.Stop.CHECK, stopped.stop());
        assertEquals(2, stopped.stoppedAtStep());
        assertEquals(List.of(), stopped.regions());

        assertEquals(Optional.empty(), thread.planOutcome(neverInstalled));
      }
    }
  }

  private static List<CaptureRecord> collect(TickCapture capture, int count) {
    List<CaptureRecord> out = new ArrayList<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (out.size() < count && System.nanoTime() < deadline) {
      capture.poll(50, b -> out.add(CaptureRecord.parse(b)));
    }
    assertTrue(out.size() >= count, "only " + out.size() + " records in 30 s");
    return out;
  }
}
