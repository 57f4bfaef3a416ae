package dev.polystack.host.session;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class PauseStatsTest {

  @Test
  void meanMedianP99AndMax() {
    PauseStats stats = new PauseStats();
    for (int i = 100; i >= 1; i--) {
      stats.add(i * 1000L);
    }
    assertEquals(100, stats.count());
    assertEquals(50_500, stats.meanNanos());
    assertEquals(50_000, stats.quantileNanos(0.5));
    assertEquals(99_000, stats.quantileNanos(0.99));
    assertEquals(100_000, stats.maxNanos());
  }

  @Test
  void emptyIsAllZero() {
    PauseStats stats = new PauseStats();
    assertEquals(0, stats.meanNanos());
    assertEquals(0, stats.quantileNanos(0.5));
    assertEquals(0, stats.maxNanos());
  }
}
