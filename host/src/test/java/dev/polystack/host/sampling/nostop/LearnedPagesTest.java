package dev.polystack.host.sampling.nostop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.sampling.SampleMemory;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CaptureStep;
import java.util.List;
import org.junit.jupiter.api.Test;

class LearnedPagesTest {

  private static List<Long> copied(CapturePlan plan) {
    return plan.steps().stream().filter(s -> s instanceof CaptureStep.Constant)
        .map(s -> ((CaptureStep.Constant) s).value()).toList();
  }

  @Test
  void pagesMostWalksNeedAreCopiedAtTheTick() {
    LearnedPages learned = new LearnedPages();
    assertTrue(learned.plan().isEmpty());
    for (int i = 0; i < 100; i++) {
      learned.walked(i % 50 == 0 ? List.of(0x9000L) : List.of(0x5000L, 0x7000L));
    }
    // 0x9000 was needed by 2 walks in 100: under the 1-in-32 share.
    assertEquals(List.of(0x5000L, 0x7000L), copied(learned.plan()));
  }

  @Test
  void atMostSixPagesAndTheSameSetGivesTheSamePlan() {
    LearnedPages a = new LearnedPages();
    LearnedPages b = new LearnedPages();
    for (int i = 0; i < 64; i++) {
      for (long p = 1; p <= 10; p++) {
        a.walked(List.of(p << 12));
      }
    }
    for (int i = 0; i < 64; i++) {
      for (long p = 10; p >= 1; p--) {
        b.walked(List.of(p << 12));
      }
    }
    assertEquals(LearnedPages.MAX_PAGES, copied(a.plan()).size());
    assertEquals(a.plan().steps().size(), 2 * LearnedPages.MAX_PAGES);
  }

  @Test
  void aPageTheProgramLeftBehindIsDropped() {
    LearnedPages learned = new LearnedPages();
    for (int i = 0; i < 100; i++) {
      learned.walked(List.of(0x5000L));
    }
    for (int i = 0; i < 8 * LearnedPages.WINDOW; i++) {
      learned.walked(List.of(0x8000L));
    }
    assertEquals(List.of(0x8000L), copied(learned.plan()));
  }

  /**
   * Past MAX_TRACKED distinct pages (a walk that touches new memory every sample) what is
   * remembered is cut back and the hot page is still learned: memory stays bounded, the plan
   * still right.
   */
  @Test
  void morePagesThanTrackedAreForgottenAndTheHotPageIsStillLearned() {
    LearnedPages learned = new LearnedPages();
    long fresh = 1L << 32;
    int walks = 3 * LearnedPages.MAX_TRACKED / 100;
    for (int i = 0; i < walks; i++) {
      List<Long> pages = new java.util.ArrayList<>(List.of(0x5000L));
      for (int k = 0; k < 100; k++) {
        pages.add(fresh);
        fresh += SampleMemory.PAGE;
      }
      learned.walked(pages);
      assertTrue(learned.tracked() <= LearnedPages.MAX_TRACKED + pages.size(),
          "tracked " + learned.tracked() + " after walk " + i);
    }
    assertTrue(fresh > (1L << 32) + (long) LearnedPages.MAX_TRACKED * SampleMemory.PAGE,
        "the walks touched more pages than are tracked");
    assertEquals(List.of(0x5000L), copied(learned.plan()));
  }
}
