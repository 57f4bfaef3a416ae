package dev.polystack.host.monitor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.bpf.ProbeMonitor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The args record layout of probe_monitor.bpf.c (struct arg_record), as ProbeSession reads it. */
class ProbeRecordTest {
  private static final List<ProbeSite> SITES = List.of(
      new ProbeSite(SiteSpec.parse("app:f"), "/app", Path.of("/app"), 0x10, 0x1010),
      new ProbeSite(SiteSpec.parse("app:f%return"), "/app", Path.of("/app"), 0x10, 0x1010));

  private static ByteBuffer record(int site, int flags, long time, long rax, long duration) {
    ByteBuffer b = ByteBuffer.allocate(ProbeMonitor.RECORD_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(0, 7).putInt(4, 8).putLong(8, time).putInt(16, site).putInt(20, flags);
    for (int i = 0; i < 6; i++) {
      b.putLong(24 + 8 * i, 100 + i);
    }
    b.putLong(72, rax).putLong(80, duration);
    return b;
  }

  @Test
  void anEntryRecordCarriesItsRegisters() {
    ProbeSession.Hit h = ProbeSession.parse(record(0, ProbeMonitor.RECORD_ARGS, 5, 0, 0), 7,
        SITES);
    assertEquals(88, ProbeMonitor.RECORD_BYTES);
    assertFalse(h.atReturn());
    assertEquals(8, h.tid());
    assertEquals(5, h.monotonicNanos());
    assertArrayEquals(new long[] {100, 101, 102, 103, 104, 105}, h.args());
  }

  @Test
  void aReturnRecordCarriesTheEntrysRegistersWhenTheKernelKeptThem() {
    ProbeSession.Hit kept = ProbeSession.parse(record(1,
        ProbeMonitor.RECORD_RETURN | ProbeMonitor.RECORD_ARGS, 9_000, -1, 2_000), 7, SITES);
    assertTrue(kept.atReturn());
    assertEquals(9_000, kept.monotonicNanos());
    assertEquals(-1, kept.rax());
    assertEquals(2_000, kept.durationNanos());
    assertArrayEquals(new long[] {100, 101, 102, 103, 104, 105}, kept.args());
    ProbeSession.Hit lost = ProbeSession.parse(record(1, ProbeMonitor.RECORD_RETURN, 9_000, 3,
        2_000), 7, SITES);
    assertNull(lost.args());
    assertEquals(3, lost.rax());
  }

  @Test
  void recordsThisProgramDoesNotWriteAreRefused() {
    assertNull(ProbeSession.parse(record(0, 0, 5, 0, 0), 7, SITES)); // entry without registers
    assertNull(ProbeSession.parse(record(2, ProbeMonitor.RECORD_ARGS, 5, 0, 0), 7, SITES));
    assertNull(ProbeSession.parse(record(-1, ProbeMonitor.RECORD_ARGS, 5, 0, 0), 7, SITES));
    assertNull(ProbeSession.parse(ByteBuffer.allocate(ProbeMonitor.RECORD_BYTES - 1), 7,
        SITES));
  }
}
