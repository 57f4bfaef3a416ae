package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class CarriedPeriodsTest {
  private static final long HZ_99 = 1_000_000_000L / 99;

  @Test
  void aKeptSampleOnTimeStandsForOnePeriod() {
    CarriedPeriods carry = new CarriedPeriods(HZ_99);
    carry.sampling(7);
    assertEquals(1, carry.take(7));
    carry.tickDone();
    carry.sampling(7);
    assertEquals(1, carry.take(7));
  }

  @Test
  void missedTicksGoToEveryThreadOfTheNextTickAndOnlyOnce() {
    CarriedPeriods carry = new CarriedPeriods(HZ_99);
    carry.late(3);
    carry.sampling(1);
    carry.sampling(2);
    carry.tickDone();
    assertEquals(4, carry.take(1));
    assertEquals(4, carry.take(2));
    carry.sampling(1);
    assertEquals(1, carry.take(1), "carried once");
  }

  @Test
  void ticksMissedAfterASampleThatWasNotKeptWaitForTheThreadsNextKeptOne() {
    // The cold start: a learning walk (not kept) makes the loop late, and the next tick's
    // sample is a learning walk again. Both the walks and the missed ticks reach the first
    // kept sample.
    CarriedPeriods carry = new CarriedPeriods(HZ_99);
    carry.sampling(5);
    carry.notKept(5);
    carry.tickDone();
    carry.late(13);
    carry.sampling(5);
    carry.notKept(5);
    carry.tickDone();
    carry.sampling(5);
    assertEquals(1 + 1 + 13 + 1, carry.take(5));
  }

  @Test
  void threadsNotSampledAtTheLateTickCarryNothing() {
    CarriedPeriods carry = new CarriedPeriods(HZ_99);
    carry.late(5);
    carry.sampling(1);
    carry.tickDone();
    carry.sampling(2);
    assertEquals(1, carry.take(2), "thread 2 was off its CPU when the ticks were missed");
    assertEquals(6, carry.take(1));
  }

  @Test
  void atMostOneSecondOfPeriodsIsCarried() {
    CarriedPeriods carry = new CarriedPeriods(HZ_99);
    carry.late(100_000);
    carry.sampling(1);
    for (int i = 0; i < 500; i++) {
      carry.notKept(1);
    }
    assertEquals(99, carry.take(1));
  }

  @Test
  void exitedThreadsDoNotGrowItWithoutBound() {
    CarriedPeriods carry = new CarriedPeriods(HZ_99);
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
