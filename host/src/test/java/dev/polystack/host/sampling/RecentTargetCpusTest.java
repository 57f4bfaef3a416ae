package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.BitSet;
import org.junit.jupiter.api.Test;

class RecentTargetCpusTest {
  static final long MS = 1_000_000L;

  private static BitSet of(int... cpus) {
    BitSet b = new BitSet();
    for (int c : cpus) {
      b.set(c);
    }
    return b;
  }

  @Test
  void aCpuStaysTheTargetsForTheMemoryAfterItsLastTick() {
    RecentTargetCpus cpus = new RecentTargetCpus(50 * MS, 4);
    cpus.ticked(1, 100, 0);
    cpus.ticked(2, 100, 20 * MS);
    assertEquals(of(1, 2), cpus.at(30 * MS));
    assertEquals(of(2), cpus.at(60 * MS));
    assertEquals(of(), cpus.at(200 * MS));
  }

  @Test
  void asManyRecentThreadsAsCpusTakeEveryCpu() {
    RecentTargetCpus cpus = new RecentTargetCpus(50 * MS, 2);
    // Both busy threads on CPU 0 for a moment: the target still wants both CPUs.
    cpus.ticked(0, 100, 0);
    cpus.ticked(0, 101, 10 * MS);
    BitSet all = cpus.at(20 * MS);
    assertEquals(true, all.get(0) && all.get(1), all.toString());
  }
}
