package dev.polystack.host.sched;

import dev.polystack.host.sys.DiagnosticSwitches;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import jnr.ffi.Pointer;

/**
 * Keeps this JVM's threads off the CPUs that the target's sampled threads run on, as long as CPUs
 * are left for both. A profiler in another process shares the machine with its target, and on few
 * CPUs the scheduler puts polystack's threads (the JIT compiler, the tracer's work after a resume,
 * the sample processor) on the target's CPU, where each wake-up preempts the target or queues it
 * (the target's run queue wait, measured in docs/benchmarks.md, "Figures behind the code's
 * choices"). Making the compiler nice only starved it when every CPU was busy; an affinity that
 * excludes the target's CPU moves it instead, and on a busy machine it shares the other CPUs
 * fairly.
 *
 * <p>The JVM's threads are re-pinned when the set of target CPUs changes, at most every {@link
 * #MIN_INTERVAL_NANOS}. Threads the JVM starts later inherit the mask of the thread that creates
 * them, which is then one of ours. When the target runs on every CPU we may use, or on none
 * known, the JVM keeps its full mask. {@link #close} gives every thread its original mask back.
 * Best effort: a refusal (a cpuset that changed under us) turns it off for good.
 *
 * <p>Not thread-safe: one instance, called from one thread (the tracer's sampling loop).
 */
public final class CpuPlacement implements AutoCloseable {
  private static final long SYS_SCHED_SETAFFINITY = 203;
  private static final long SYS_SCHED_GETAFFINITY = 204;
  /** Room for 1024 CPUs, as glibc's cpu_set_t. */
  static final int MASK_BYTES = 128;
  /** Re-pinning lists and touches every JVM thread: not more often than this. */
  static final long MIN_INTERVAL_NANOS = 20_000_000L;
  private static final Path TASKS = Path.of("/proc/self/task");

  private final BitSet allowed;
  private final Pointer mask = Native.allocate(MASK_BYTES);
  private BitSet applied;
  private final BitSet scratch = new BitSet();
  private long lastChange = Long.MIN_VALUE / 2;
  private boolean enabled;
  private int repins;

  private CpuPlacement(BitSet allowed, boolean enabled) {
    this.allowed = allowed;
    this.applied = (BitSet) allowed.clone();
    this.enabled = enabled && allowed.cardinality() > 1;
  }

  /**
   * For this process, with the CPUs it may use now. {@code -Dpolystack.cpuPlacement=false} turns
   * it off, to compare.
   */
  public static CpuPlacement forThisProcess() {
    return forThisProcess(DiagnosticSwitches.CURRENT);
  }

  /** For this process, as {@code switches} say. */
  public static CpuPlacement forThisProcess(DiagnosticSwitches switches) {
    boolean wanted = switches.cpuPlacement();
    BitSet own = ownAffinity();
    return new CpuPlacement(own == null ? new BitSet() : own, wanted && own != null);
  }

  /** Whether it may re-pin at all (more than one CPU, the affinity readable, not turned off). */
  public boolean enabled() {
    return enabled;
  }

  /** How many times the JVM's threads were re-pinned so far. */
  public int repins() {
    return repins;
  }

  /** The CPUs this JVM's threads are pinned to now. */
  public BitSet current() {
    return (BitSet) applied.clone();
  }

  /**
   * The target's sampled threads were just seen running on {@code targetCpus} (empty: none was
   * running, which changes nothing). Re-pins the JVM's threads to the CPUs left, or back to all
   * of them when none would be left.
   */
  public void targetRunsOn(BitSet targetCpus, long nowNanos) {
    if (!enabled || targetCpus.isEmpty()) {
      return;
    }
    // Called once per tick: the set is worked out in a reused scratch, copied only on a change.
    BitSet wanted = scratch;
    wanted.clear();
    wanted.or(allowed);
    wanted.andNot(targetCpus);
    if (wanted.isEmpty()) {
      wanted = allowed;
    }
    if (wanted.equals(applied) || nowNanos - lastChange < MIN_INTERVAL_NANOS) {
      return;
    }
    lastChange = nowNanos;
    if (!pinAll(wanted)) {
      enabled = false;
      pinAll(allowed);
      return;
    }
    applied = (BitSet) wanted.clone();
    repins++;
  }

  /** Every thread of this JVM back on the CPUs it had at the start. */
  @Override
  public void close() {
    if (!applied.equals(allowed)) {
      pinAll(allowed);
      applied = (BitSet) allowed.clone();
    }
  }

  /** Pins every thread of this process to {@code cpus}; false if the kernel refused the mask. */
  private boolean pinAll(BitSet cpus) {
    fill(cpus);
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
      for (Path task : tasks) {
        int tid;
        try {
          tid = Integer.parseInt(task.getFileName().toString());
        } catch (NumberFormatException e) {
          continue;
        }
        long r = Native.libc().syscall(SYS_SCHED_SETAFFINITY, tid, MASK_BYTES, mask.address(),
            0, 0, 0);
        if (r != 0 && Native.errno() != Errno.ESRCH) {
          return false; // EINVAL: none of these CPUs is ours any more; EPERM: not allowed
        }
      }
      return true;
    } catch (IOException | SecurityException e) {
      return false;
    }
  }

  private void fill(BitSet cpus) {
    byte[] bytes = new byte[MASK_BYTES];
    byte[] set = cpus.toByteArray(); // little-endian bit order, as the kernel's cpumask
    System.arraycopy(set, 0, bytes, 0, Math.min(set.length, MASK_BYTES));
    mask.put(0, bytes, 0, MASK_BYTES);
  }

  /** This thread's affinity (every JVM thread starts with the launcher's), or null. */
  private static BitSet ownAffinity() {
    Pointer buf = Native.allocate(MASK_BYTES);
    long r = Native.libc().syscall(SYS_SCHED_GETAFFINITY, 0, MASK_BYTES, buf.address(), 0, 0, 0);
    if (r <= 0) {
      return null;
    }
    byte[] bytes = new byte[(int) Math.min(r, MASK_BYTES)];
    buf.get(0, bytes, 0, bytes.length);
    return BitSet.valueOf(bytes);
  }
}
