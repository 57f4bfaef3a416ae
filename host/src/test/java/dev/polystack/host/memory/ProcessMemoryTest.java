package dev.polystack.host.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.polystack.host.ptrace.PtraceConstants;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.testutil.TestTarget;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProcessMemoryTest {

  @Test
  void unmappedAddressIsTypedFailure() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      t.awaitLine("ready", 5000);
      ProcessMemory mem = ProcessMemory.of(t.pid());
      RemoteReadException e = assertThrows(RemoteReadException.class, () -> mem.readLong(0x10));
      assertEquals(0x10, e.address());
      assertEquals(RemoteReadException.Reason.UNREADABLE, e.reason());
      assertEquals(0, mem.read(0x10, new byte[8], 0, 8));
    }
  }

  @Test
  void partialReadAcrossEndOfMappingReturnsPrefix() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      Map<String, String> ready = t.awaitLine("ready", 5000);
      long pages = TestTarget.hex(ready.get("pages"));
      byte[] buf = new byte[256];
      // Page 2 is PROT_NONE: process_vm_readv stops at the boundary.
      int n = ProcessMemory.of(t.pid()).read(pages + 4096 - 100, buf, 0, 256);
      assertEquals(100, n);
      for (int i = 0; i < n; i++) {
        assertEquals((byte) ((4096 - 100 + i) & 0xff), buf[i]);
      }
    }
  }

  @Test
  void scatteredReadReadsEveryRangeInOneGoAndAFailingRangeSpoilsNoOther() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      Map<String, String> ready = t.awaitLine("ready", 5000);
      long pages = TestTarget.hex(ready.get("pages"));
      ProcessMemory mem = ProcessMemory.of(t.pid());
      // Readable, unreadable (the PROT_NONE page), readable again, and one that runs into the
      // PROT_NONE page: the kernel stops at the second, the rest is read by a second call.
      long[] at = {pages + 8, pages + 4096 + 8, pages + 1000, pages + 4096 - 96, 0x10};
      byte[][] into = {new byte[32], new byte[16], new byte[64], new byte[200], new byte[8]};
      int[] got = mem.readScattered(at, into);
      assertEquals(List.of(32, 0, 64, 96, 0), Arrays.stream(got).boxed().toList());
      for (int r : new int[] {0, 2, 3}) {
        byte[] single = new byte[got[r]];
        assertEquals(got[r], mem.read(at[r], single, 0, single.length));
        assertArrayEquals(single, Arrays.copyOf(into[r], got[r]), "range " + r);
        assertEquals((byte) ((at[r] - pages) & 0xff), into[r][0], "range " + r);
      }
      assertThrows(IllegalArgumentException.class,
          () -> mem.readScattered(new long[] {pages}, new byte[0][]));
    }
  }

  @Test
  void peekFallbackCompletesShortReadOnStoppedTracee() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      Map<String, String> ready = t.awaitLine("ready", 5000);
      long pages = TestTarget.hex(ready.get("pages"));
      int pid = t.pid();
      try (Tracer tracer = Tracer.start(pid)) {
        tracer.seize(pid, PtraceConstants.DEFAULT_OPTIONS);
        tracer.stop(pid, Duration.ofSeconds(5));
        ProcessMemory mem = ProcessMemory.builder(pid).peekFallback(tracer, pid).build();
        byte[] buf = new byte[203];
        // PEEKDATA uses FOLL_FORCE and may read the PROT_NONE page process_vm_readv refuses.
        int n = mem.read(pages + 4096 - 101, buf, 0, buf.length);
        assertEquals(buf.length, n);
        for (int i = 0; i < n; i++) {
          assertEquals((byte) ((4096 - 101 + i) & 0xff), buf[i], "byte " + i);
        }
      }
      t.finish();
      assertEquals(7, t.process.waitFor(Duration.ofSeconds(10)).exitCode());
    }
  }

  @Test
  void oversizedReadIsRefusedBeforeAllocating() throws Exception {
    ProcessMemory mem = ProcessMemory.builder(1).maxReadBytes(4096).build();
    RemoteReadException e =
        assertThrows(RemoteReadException.class, () -> mem.readBytes(0x1000, 1 << 30));
    assertEquals(RemoteReadException.Reason.TOO_LARGE, e.reason());
    assertThrows(RemoteReadException.class, () -> mem.read(0x1000, new byte[8192], 0, 8192));
  }
}
