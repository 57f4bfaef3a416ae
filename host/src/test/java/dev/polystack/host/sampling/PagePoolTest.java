package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.testutil.TestTarget;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** One scattered read of a live process: the lead range, whole pages, an unreadable page. */
class PagePoolTest {

  @Test
  void readsTheLeadAndEveryPageInOneGoAndMarksAnUnreadablePageEmpty() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      Map<String, String> ready = t.awaitLine("ready", 5000);
      long pages = TestTarget.hex(ready.get("pages")); // page 1 readable, page 2 PROT_NONE
      ProcessMemory mem = ProcessMemory.of(t.pid());
      PagePool pool = new PagePool();

      byte[] lead = new byte[100];
      Map<Long, byte[]> out = new HashMap<>();
      int got = pool.read(mem, pages + 8, lead, new long[] {pages, pages + 4096}, out);
      assertEquals(100, got);
      assertEquals((byte) 8, lead[0]);
      assertEquals(SampleMemory.PAGE, out.get(pages).length);
      assertEquals((byte) 200, out.get(pages)[200]);
      assertEquals(0, out.get(pages + 4096).length, "the PROT_NONE page is missed, not zeros");

      // Without a lead, the same buffers again: nothing new is allocated for the pages.
      Map<Long, byte[]> again = new HashMap<>();
      assertEquals(0, pool.read(mem, 0, null, new long[] {pages}, again));
      assertSame(out.get(pages), again.get(pages));
    }
  }
}
