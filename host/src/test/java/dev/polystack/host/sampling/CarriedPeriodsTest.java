package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class CarriedPeriodsTest {
  private static final long HZ_99 = 1_000_000_000L / 99;

  private final CarriedPeriods carry = new CarriedPeriods(HZ_99);

  /** A tick of the sampling loop that samples {@code tids}, {@code late} ticks after the last. */
  private void tick(long late, int... tids) {
    carry.late(late);
    for (int tid : tids) {
      carry.sampling(tid);
    }
    carry.tickDone();
  }

  @Test
  void aKeptSampleOnTimeStandsForOnePeriod() {
    tick(0, 7);
    assertEquals(1, carry.take(7));
    tick(0, 7);
    assertEquals(1, carry.take(7));
  }

  @Test
  void missedTicksGoToEveryThreadOfTheNextTickAndOnlyOnce() {
    tick(3, 1, 2);
    assertEquals(4, carry.take(1));
    assertEquals(4, carry.take(2));
    tick(0, 1);
    assertEquals(1, carry.take(1), "carried once");
  }

  @Test
  void ticksMissedAfterASampleThatWasNotKeptWaitForTheThreadsNextKeptOne() {
    // The cold start: a learning walk (not kept) makes the loop late, and the next tick's
    // sample is a learning walk again. Both the walks and the missed ticks reach the first
    // kept sample.
    tick(0, 5);
    carry.notKept(5);
    tick(13, 5);
    carry.notKept(5);
    tick(0, 5);
    assertEquals(1 + 1 + 13 + 1, carry.take(5));
  }

  @Test
  void threadsNotSampledAtTheLateTickCarryNothing() {
    tick(5, 1);
    tick(0, 2);
    assertEquals(1, carry.take(2), "thread 2 was off its CPU when the ticks were missed");
    assertEquals(6, carry.take(1));
  }

  @Test
  void atMostOneSecondOfPeriodsIsCarried() {
    tick(100_000, 1);
    for (int i = 0; i < 500; i++) {
      carry.notKept(1);
    }
    assertEquals(99, carry.take(1));
  }

  @Test
  void exitedThreadsDoNotGrowItWithoutBound() {
    for (int tid = 1; tid <= 3 * CarriedPeriods.MAX_THREADS; tid++) {
      carry.notKept(tid);
    }
    assertEquals(2, carry.take(3 * CarriedPeriods.MAX_THREADS));
    assertEquals(1, carry.take(1), "dropped once the table was full");
  }

  @Test
  void refusesANonPositivePeriod() {
    assertThrows(IllegalArgumentException.class, () -> new CarriedPeriods(0));
  }
}
