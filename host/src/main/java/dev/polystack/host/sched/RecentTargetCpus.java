package dev.polystack.host.sched;

import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;

/**
 * Where a target ran lately, from bpf mode's tick records, for {@link
 * dev.polystack.host.sched.CpuPlacement}. Each CPU's event ticks once a period at its own phase,
 * and records only while a target thread runs there, so a CPU stays the target's for a while
 * after its last record: a set from one poll's records (often one CPU's tick) took a CPU from
 * polystack while the target used both. A target that ran as many threads as there are CPUs
 * meanwhile gets them all, even while the scheduler has two of its threads on one CPU for a
 * moment (which placing polystack from the CPUs alone would make last).
 */
public final class RecentTargetCpus {
  static final int MAX_THREADS = 4096;

  private final long memoryNanos;
  /** CPUs this process may use, read before placement narrows what the JVM reports. */
  private final int cpus;
  private final long[] cpuSeen;
  private final Map<Integer, Long> threadSeen = new HashMap<>();
  private final BitSet recent = new BitSet();

  /** @param memoryNanos how long a CPU or thread counts after its last tick */
  public RecentTargetCpus(long memoryNanos, int cpus) {
    if (memoryNanos <= 0 || cpus < 1) {
      throw new IllegalArgumentException("memory " + memoryNanos + " ns, " + cpus + " CPUs");
    }
    this.memoryNanos = memoryNanos;
    this.cpus = cpus;
    this.cpuSeen = new long[cpus * 2 + 64];
    Arrays.fill(cpuSeen, Long.MIN_VALUE / 2);
  }

  /** CPUs this process may use. */
  public int cpus() {
    return cpus;
  }

  /** A tick of thread {@code tid} on {@code cpu} at {@code monotonicNanos}. */
  public void ticked(int cpu, int tid, long monotonicNanos) {
    if (cpu >= 0 && cpu < cpuSeen.length) {
      cpuSeen[cpu] = monotonicNanos;
    }
    if (threadSeen.size() < MAX_THREADS || threadSeen.containsKey(tid)) {
      threadSeen.put(tid, monotonicNanos);
    }
  }

  /** The target's CPUs as of {@code nowNanos}; the set is reused by the next call. */
  public BitSet at(long nowNanos) {
    recent.clear();
    threadSeen.values().removeIf(t -> nowNanos - t > memoryNanos);
    if (threadSeen.size() >= cpus) {
      recent.set(0, cpuSeen.length);
      return recent;
    }
    for (int cpu = 0; cpu < cpuSeen.length; cpu++) {
      if (nowNanos - cpuSeen[cpu] <= memoryNanos) {
        recent.set(cpu);
      }
    }
    return recent;
  }
}
