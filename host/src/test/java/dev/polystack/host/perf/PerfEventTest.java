package dev.polystack.host.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.testutil.TestTarget;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PerfEventTest {
  private static final long REGS = (1L << PerfConstants.REG_IP) | (1L << PerfConstants.REG_SP)
      | (1L << PerfConstants.REG_BP);
  private static final long SAMPLE_TYPE = PerfConstants.SAMPLE_IP | PerfConstants.SAMPLE_TID
      | PerfConstants.SAMPLE_TIME | PerfConstants.SAMPLE_REGS_USER | PerfConstants.SAMPLE_STACK_USER;

  private static PerfEventAttr cpuClock(int stackBytes) {
    return PerfEventAttr.builder()
        .type(PerfConstants.TYPE_SOFTWARE)
        .config(PerfConstants.COUNT_SW_CPU_CLOCK)
        .sampleFreq(1000)
        .sampleType(SAMPLE_TYPE)
        .sampleRegsUser(REGS)
        .sampleStackUser(stackBytes)
        .excludeKernel(true)
        .excludeHv(true)
        .wakeupEvents(1)
        .build();
  }

  @Test
  void attrEncodingMatchesKernelLayout() {
    PerfEventAttr a = PerfEventAttr.builder().removeOnExec(true).sigtrap(true).preciseIp(2)
        .breakpoint(PerfConstants.HW_BREAKPOINT_X, 0x1234, 8).build();
    byte[] b = a.encode();
    assertEquals(136, b.length);
    assertEquals(136, b[4] & 0xff);
    assertEquals(PerfConstants.TYPE_BREAKPOINT, b[0]);
    assertEquals(4, b[52]);
    assertEquals(0x34, b[56] & 0xff);
    assertEquals(8, b[64]);
    long flags = java.nio.ByteBuffer.wrap(b, 40, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
    assertEquals((1L << 0) | (2L << 15) | (1L << 36) | (1L << 37), flags);
  }

  @Test
  void cpuClockSamplesWithWrappedRecordsAndDisableEnable() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      t.awaitLine("ready", 5000);
      int pid = t.pid();
      PerfEventAttr attr = cpuClock(8192);
      SampleParser parser = SampleParser.forAttr(attr);
      List<PerfSample> samples = new ArrayList<>();
      try (PerfEvent ev = PerfEvent.open(attr, pid)) {
        PerfRingBuffer ring = ev.mapRing(3); // 8 data pages; each sample is > 8 KiB
        ev.enable();
        // Until 100 samples and a wrapped record, however long a busy host takes to give them.
        long end = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < end && (samples.size() <= 100 || ring.stats().wrapped() == 0)) {
          if (ring.awaitData(Duration.ofMillis(50))) {
            ring.drain(r -> {
              if (r.type() == PerfConstants.RECORD_SAMPLE) {
                samples.add(parser.parse(r));
              }
            });
          }
        }
        PerfRingBuffer.Stats st = ring.stats();
        assertTrue(samples.size() > 100, "samples " + samples.size() + " " + st);
        assertTrue(st.wrapped() > 0, st.toString());
        assertEquals(0, st.malformed());
        int inExe = 0;
        for (PerfSample s : samples) {
          assertEquals(pid, s.tid());
          assertEquals(pid, s.pid());
          assertEquals(3, s.regs().length);
          assertEquals(s.ip(), s.reg(REGS, PerfConstants.REG_IP));
          assertEquals(8192, s.stack().length);
          assertTrue(s.stackDynSize() > 0 && s.stackDynSize() <= 8192);
          if (TestTarget.inExecutableOf(pid, s.ip())) {
            inExe++;
          }
        }
        // A few samples land in the vDSO clock read; the bulk must be in the program.
        assertTrue(inExe > samples.size() / 2, inExe + " of " + samples.size());

        ev.disable(); // synchronous: what was written is in the ring now
        ring.drain(r -> {});
        long before = ring.stats().samples();
        // The target runs on for 15 ticks (~150 ms) of CPU, ~150 samples' worth when enabled.
        TestTarget.awaitMoreCpu(t.pid(), 15, 30_000);
        ring.drain(r -> {});
        assertTrue(ring.stats().samples() - before <= 1, "no samples while disabled");
        ev.enable();
        long resumed = 0;
        for (int i = 0; i < 30 && resumed <= 20; i++) {
          ring.awaitData(Duration.ofMillis(20));
          ring.drain(r -> {});
          resumed = ring.stats().samples() - before;
        }
        assertTrue(resumed > 20, "samples resume after enable: " + resumed + " " + ring.stats());
        ev.reset();
      }
    }
  }

  @Test
  void slowReaderWithTinyRingCountsLostRecords() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      t.awaitLine("ready", 5000);
      try (PerfEvent ev = PerfEvent.open(cpuClock(1024), t.pid())) {
        PerfRingBuffer ring = ev.mapRing(0); // a single data page
        ev.enable();
        // 30 ticks (~300 ms) of the target's CPU: ~300 samples for a page that holds tens.
        TestTarget.awaitMoreCpu(t.pid(), 30, 30_000);
        // The kernel writes PERF_RECORD_LOST only once the reader has made room again.
        long deadline = System.nanoTime() + 30_000_000_000L;
        do {
          ring.drain(r -> {});
          ring.awaitData(Duration.ofMillis(50));
        } while (ring.stats().lostRecords() == 0 && System.nanoTime() < deadline);
        ring.drain(r -> {});
        PerfRingBuffer.Stats st = ring.stats();
        assertTrue(st.lostRecords() > 0, st.toString());
        assertTrue(st.lostEvents() > 0, st.toString());
        assertEquals(0, st.malformed());
      }
    }
  }

  @Test
  void breakpointHitsEqualCalls() throws Exception {
    java.nio.file.Path go = Files.createTempDirectory("polystack-go").resolve("go");
    try (TestTarget t = TestTarget.start("calls", "1000", go.toString())) {
      Map<String, String> ready = t.awaitLine("ready", 5000);
      long work = TestTarget.hex(ready.get("work"));
      PerfEventAttr attr = PerfEventAttr.builder()
          .breakpoint(PerfConstants.HW_BREAKPOINT_X, work, 8)
          .samplePeriod(1)
          .sampleType(PerfConstants.SAMPLE_IP | PerfConstants.SAMPLE_TID)
          .excludeKernel(true)
          .excludeHv(true)
          .wakeupEvents(64)
          .build();
      SampleParser parser = SampleParser.forAttr(attr);
      int[] hits = new int[1];
      try (PerfEvent ev = PerfEvent.open(attr, t.pid())) {
        PerfRingBuffer ring = ev.mapRing(4);
        ev.enable();
        Files.createFile(go); // releases the target into its call loop
        Map<String, String> done = t.awaitLine("calls=", 5000);
        assertEquals("1000", done.get("calls"));
        assertEquals(0, t.process.waitFor(Duration.ofSeconds(5)).exitCode());
        ring.drain(r -> {
          if (r.type() == PerfConstants.RECORD_SAMPLE) {
            PerfSample s = parser.parse(r);
            assertEquals(work, s.ip());
            hits[0]++;
          }
        });
        assertEquals(1000, hits[0], ring.stats().toString());
        assertEquals(1000, ev.readCount());
      }
    }
  }
}
