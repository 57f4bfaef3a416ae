package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.MemoryReadException;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PagePrefetchTest {
  private static final int PAGE = SampleMemory.PAGE;

  @Test
  void aThreadWalksStoppedUntilItsPagesAreKnownAndAgainAfterAMiss() {
    PagePrefetch p = new PagePrefetch();
    assertTrue(p.walkStopped(7));
    assertEquals(0, p.pages(7).length);
    p.learned(7, Set.of(0x1000L, 0x5000L));
    assertFalse(p.walkStopped(7));
    long[] pages = p.pages(7);
    Arrays.sort(pages);
    assertArrayEquals(new long[] {0x1000L, 0x5000L}, pages);
    p.walked(7, Set.of(0x1000L), Set.of());
    assertFalse(p.walkStopped(7));
    p.walked(7, Set.of(0x1000L), Set.of(0x9000L));
    assertTrue(p.walkStopped(7), "a miss sends the next walk into the stop");
    assertTrue(p.snapshotOf(7).containsKey(0x9000L), "and the missed page joins the set");
    assertTrue(p.walkStopped(8), "threads are kept apart");
  }

  @Test
  void pagesNoWalkReadForAWhileAreForgottenAndAnOversizedSetKeepsWalksStopped() {
    PagePrefetch p = new PagePrefetch();
    p.learned(1, Set.of(0x1000L, 0x2000L));
    for (int i = 0; i <= PagePrefetch.FORGET_AFTER; i++) {
      p.walked(1, Set.of(0x1000L), Set.of());
    }
    assertEquals(Set.of(0x1000L), p.snapshotOf(1).keySet());
    Set<Long> many = new java.util.HashSet<>();
    for (long i = 0; i <= PagePrefetch.MAX_PAGES; i++) {
      many.add(i * PAGE);
    }
    p.learned(2, many);
    assertTrue(p.walkStopped(2));
    p.forget(1);
    assertTrue(p.walkStopped(1));
  }

  @Test
  void snapshotMemoryServesTheCopyAndItsPagesAndRecordsEverythingElseAsMissed()
      throws Exception {
    byte[] stack = new byte[64];
    stack[8] = 42;
    byte[] page = new byte[PAGE];
    page[16] = 7;
    SampleMemory m = SampleMemory.snapshot(0x7000_0000L, stack, stack.length,
        Map.of(0x1000L, page, 0x3000L, new byte[0]));
    assertEquals(42, m.readLong(0x7000_0008L));
    assertEquals(7, m.readLong(0x1010L));
    assertThrows(MemoryReadException.class, () -> m.readLong(0x3008L)); // unmapped at the stop
    assertThrows(MemoryReadException.class, () -> m.readLong(0x5008L)); // not in the snapshot
    assertEquals(Set.of(0x5000L), m.missedPages());
    assertEquals(Set.of(0x1000L, 0x3000L), m.pagesRead());
    assertEquals(0, m.liveReads());
  }
}
