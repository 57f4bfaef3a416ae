package dev.polystack.host.sched;

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

  /**
   * Threads past MAX_THREADS are not remembered (nor counted toward "as many threads as CPUs")
   * until remembered ones expire; then new threads fit again, up to the same limit.
   */
  @Test
  void threadsPastTheLimitAreNotRememberedUntilOthersExpire() {
    int cpuCount = RecentTargetCpus.MAX_THREADS + 1;
    RecentTargetCpus cpus = new RecentTargetCpus(50 * MS, cpuCount);
    for (int tid = 1; tid <= cpuCount; tid++) {
      cpus.ticked(0, tid, 0);
    }
    // One thread per CPU ticked, but only MAX_THREADS of them are remembered: not every CPU.
    assertEquals(of(0), cpus.at(10 * MS));
    assertEquals(of(), cpus.at(100 * MS), "all expired");
    for (int tid = 100_001; tid < 100_001 + cpuCount; tid++) {
      cpus.ticked(1, tid, 110 * MS);
    }
    assertEquals(of(1), cpus.at(120 * MS), "room again, up to the same limit");
  }
}
