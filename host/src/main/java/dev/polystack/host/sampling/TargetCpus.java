package dev.polystack.host.sampling;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import java.util.BitSet;
import java.util.Set;

/** Where a target's threads ran, for {@link dev.polystack.host.sched.CpuPlacement}. */
public final class TargetCpus {
  private TargetCpus() {}

  /**
   * The CPUs the target's threads (those in {@code only}, or all when it is empty) last ran on,
   * whatever their state: before the first sample, the best guess of where they will run next
   * (a woken thread goes back to its last CPU when that CPU is free). Empty when unreadable.
   */
  public static BitSet lastOf(ProcFs proc, int pid, Set<Integer> only) {
    BitSet cpus = new BitSet();
    try {
      for (int tid : proc.forPid(pid).taskIds()) {
        if (only.isEmpty() || only.contains(tid)) {
          int cpu = proc.forPid(pid).taskStat(tid).processor();
          if (cpu >= 0) {
            cpus.set(cpu);
          }
        }
      }
    } catch (ProcReadException | RuntimeException e) {
      return new BitSet(); // no placement before the first sample; the samples place it
    }
    return cpus;
  }
}
