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
  void aThreadThatKeepsMissingWalksStoppedForASpellThenTriesTheCopyAgain() {
    PagePrefetch p = new PagePrefetch();
    p.learned(3, Set.of(0x1000L));
    // Misses up to the limit, each followed by the stopped walk it asks for: back to the copy.
    for (int i = 0; i < PagePrefetch.MAX_MISSES; i++) {
      p.walked(3, Set.of(0x1000L), Set.of(0x20000L + i * PAGE));
      assertTrue(p.walkStopped(3));
      p.learned(3, Set.of(0x1000L));
      assertFalse(p.walkStopped(3), "an occasional miss costs one stopped walk: " + i);
      p.walked(3, Set.of(0x1000L), Set.of());
    }
    // One more among the last 64: the set is not predicting this thread's walks.
    p.walked(3, Set.of(0x1000L), Set.of(0x90000L));
    for (int i = 0; i < PagePrefetch.STOPPED_SPELL - 1; i++) {
      assertTrue(p.walkStopped(3), "stopped spell, sample " + i);
      p.learned(3, Set.of(0x1000L));
    }
    p.learned(3, Set.of(0x1000L));
    assertFalse(p.walkStopped(3), "after the spell the copy is tried again");
  }

  @Test
  void pagesNoWalkReadForAWhileAreForgottenAndAnOversizedSetKeepsWalksStopped() {
    PagePrefetch p = new PagePrefetch();
    p.learned(1, Set.of(0x1000L, 0x2000L));
    walkFirstPageOnly(p, 1);
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

  /** Walks of {@code tid} from the copy that read page 0x1000 only, enough to forget others. */
  private static void walkFirstPageOnly(PagePrefetch p, int tid) {
    for (int i = 0; i <= PagePrefetch.FORGET_AFTER; i++) {
      p.walked(tid, Set.of(0x1000L), Set.of());
    }
  }

  @Test
  void aPageNeededAgainAfterItWasForgottenIsKeptLonger() {
    PagePrefetch p = new PagePrefetch();
    p.learned(4, Set.of(0x1000L, 0x2000L));
    walkFirstPageOnly(p, 4);
    assertEquals(Set.of(0x1000L), p.snapshotOf(4).keySet(), "0x2000 forgotten");
    p.walked(4, Set.of(0x1000L), Set.of(0x2000L)); // needed again: a miss
    p.learned(4, Set.of(0x1000L, 0x2000L)); // the stopped walk that follows
    for (int i = 0; i < PagePrefetch.KEEP_RETURNING; i++) {
      p.walked(4, Set.of(0x1000L), Set.of());
      assertTrue(p.snapshotOf(4).containsKey(0x2000L), "kept, sample " + i);
    }
    walkFirstPageOnly(p, 4);
    assertEquals(Set.of(0x1000L), p.snapshotOf(4).keySet(), "then forgotten after all");
    // A page never seen before that a walk misses (a new coroutine's stack) is not kept longer.
    p.walked(4, Set.of(0x1000L), Set.of(0x70000L));
    walkFirstPageOnly(p, 4);
    assertEquals(Set.of(0x1000L), p.snapshotOf(4).keySet());
  }

  @Test
  void snapshotMemoryServesTheCopyAndItsPagesAndRecordsEverythingElseAsMissed()
      throws Exception {
    byte[] stack = new byte[64];
    stack[8] = 42;
    byte[] page = new byte[PAGE];
    page[16] = 7;
    SampleMemory m = SampleMemory.snapshot(0x7000_0000L, stack, stack.length,
        Map.of(0x1000L, page, 0x3000L, new byte[0]), null);
    assertEquals(42, m.readLong(0x7000_0008L));
    assertEquals(7, m.readLong(0x1010L));
    assertThrows(MemoryReadException.class, () -> m.readLong(0x3008L)); // unmapped at the stop
    assertThrows(MemoryReadException.class, () -> m.readLong(0x5008L)); // not in the snapshot
    assertEquals(Set.of(0x5000L), m.missedPages());
    assertEquals(Set.of(0x1000L, 0x3000L), m.pagesRead());
    assertEquals(0, m.liveReads());
  }

  @Test
  void stableReadsOfPagesTheSnapshotLacksGoLiveAndNeverLeakIntoOtherReads() throws Exception {
    byte[] livePage = new byte[PAGE];
    livePage[8] = 9;
    byte[] frozen = new byte[PAGE];
    frozen[16] = 7;
    // The live process after the resume: page 0x5000 exists there, page 0x1000 has changed.
    dev.polystack.host.memory.ProcessMemory live =
        fakeLive(Map.of(0x5000L, livePage, 0x1000L, new byte[PAGE]), new int[1]);
    SampleMemory m = SampleMemory.snapshot(0x7000_0000L, new byte[64], 64,
        Map.of(0x1000L, frozen), live);
    assertEquals(9, m.stable().readLong(0x5008L), "a stable object's page is read live");
    assertEquals(7, m.stable().readLong(0x1010L), "a page the snapshot has stays frozen");
    assertEquals(1, m.stableLiveReads());
    assertThrows(MemoryReadException.class, () -> m.readLong(0x5008L),
        "any other read of that page is still a miss");
    assertEquals(Set.of(0x5000L), m.missedPages());
    assertThrows(MemoryReadException.class, () -> m.stable().readLong(0x9008L));
    SampleMemory strict = SampleMemory.snapshot(0x7000_0000L, new byte[64], 64, Map.of(), null);
    assertThrows(MemoryReadException.class, () -> strict.stable().readLong(0x5008L));
  }
  @Test
  void prefetchedMemoryServesItsPagesFirstAndReadsTheRestLiveAsMisses() throws Exception {
    byte[] prefetched = new byte[PAGE];
    prefetched[16] = 7;
    byte[] livePage = new byte[PAGE];
    livePage[8] = 9;
    livePage[16] = 5; // page 0x1000 has changed since the prefetch: the prefetch must win
    int[] liveCalls = {0};
    dev.polystack.host.memory.ProcessMemory live =
        fakeLive(Map.of(0x5000L, livePage, 0x1000L, livePage), liveCalls);
    SampleMemory m = SampleMemory.prefetched(live, 0x7000_0000L, new byte[64], 64,
        Map.of(0x1000L, prefetched, 0x3000L, new byte[0]));
    assertEquals(7, m.readLong(0x1010L), "the prefetched page, not the live one");
    assertThrows(MemoryReadException.class, () -> m.readLong(0x3008L)); // unmapped at prefetch
    assertEquals(0, liveCalls[0]);
    assertEquals(9, m.readLong(0x5008L), "a page the prefetch lacks is read live");
    assertEquals(9, m.readLong(0x5008L));
    assertEquals(1, m.liveReads(), "once per page");
    assertThrows(MemoryReadException.class, () -> m.readLong(0x9008L));
    assertEquals(Set.of(0x5000L, 0x9000L), m.missedPages(), "what the set should learn");
    assertEquals(Set.of(0x1000L, 0x3000L, 0x5000L, 0x9000L), m.pagesRead());
  }

  /** A process whose memory is {@code pages} (whole pages), counting its reads in calls[0]. */
  private static dev.polystack.host.memory.ProcessMemory fakeLive(Map<Long, byte[]> pages,
      int[] calls) {
    return new dev.polystack.host.memory.ProcessMemory() {
      @Override
      public int read(long address, byte[] dst, int off, int len) {
        calls[0]++;
        long page = address & -PAGE;
        byte[] src = pages.get(page);
        if (src == null) {
          return 0;
        }
        int n = (int) Math.min(len, page + PAGE - address);
        System.arraycopy(src, (int) (address - page), dst, off, n);
        return n;
      }

      @Override
      public int maxReadBytes() {
        return 1 << 20;
      }
    };
  }

  /** Past MAX_THREADS the least recently sampled thread's pages are forgotten, not others'. */
  @Test
  void moreThreadsThanRememberedForgetTheLeastRecentlySampled() {
    PagePrefetch p = new PagePrefetch();
    for (int tid = 1; tid <= PagePrefetch.MAX_THREADS; tid++) {
      p.learned(tid, Set.of(0x1000L * tid));
    }
    assertEquals(1, p.pages(1).length, "thread 1 sampled again: now the most recent");
    p.learned(PagePrefetch.MAX_THREADS + 1, Set.of(0x1000L));
    assertEquals(0, p.pages(2).length, "thread 2, the least recent, was forgotten");
    assertTrue(p.walkStopped(2), "and learns again from a stopped walk");
    assertArrayEquals(new long[] {0x1000L}, p.pages(1));
    assertArrayEquals(new long[] {0x1000L * 3}, p.pages(3));
    assertArrayEquals(new long[] {0x1000L}, p.pages(PagePrefetch.MAX_THREADS + 1));
  }
}
