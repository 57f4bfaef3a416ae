package dev.polystack.host.session;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.TaskStat;
import dev.polystack.otel.counters.HostCounters;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * The sampled threads' CPU time over a run, read from /proc rather than from polystack's own
 * samples, paired with the samples taken by then: the on-CPU rate (docs/operations.md, "The
 * record summary"). Each reading is the larger of two lower bounds of the true CPU time: the
 * sum of the live threads' {@code schedstat} run time (nanoseconds, misses threads that exited)
 * and the process's utime+stime (10 ms ticks, counts exited threads). A target that exits is
 * measured up to its last reading, with the samples taken up to then.
 */
public final class TargetCpuClock {
  /**
   * How often the run reads the CPU time: what an exiting target's figure may miss (its window
   * ends at the last reading, with the samples taken by then). Each reading is a few /proc
   * files per thread, which is most of what a record of a sleeping process costs
   * (docs/benchmarks.md, "The agent and record's fixed cost").
   */
  static final long READ_EVERY_NANOS = 1_000_000_000L;
  /** More threads than this are not read one by one each time; the process's total is used. */
  static final int MAX_TASKS_READ = 256;
  private static final long TICK_NANOS = 10_000_000L;
  private static final int MAX_SCHEDSTAT_BYTES = 128;

  private final ProcFs proc;
  private final int pid;
  private final Set<Integer> threads;
  private final LongSupplier samplesSoFar;
  private long firstNanos = -1;
  private long firstSamples;
  private long lastNanos = -1;
  private long lastSamples;
  private long lastReadAt;

  /**
   * @param threads the sampled threads (--tid), or empty for every thread of the process
   * @param samplesSoFar samples taken so far
   */
  public TargetCpuClock(ProcFs proc, int pid, Set<Integer> threads,
      LongSupplier samplesSoFar) {
    if (pid <= 0) {
      throw new IllegalArgumentException("pid must be positive: " + pid);
    }
    this.proc = proc;
    this.pid = pid;
    this.threads = Set.copyOf(threads);
    this.samplesSoFar = samplesSoFar;
  }

  /** Reads now if {@code force} or the last reading is older than {@link #READ_EVERY_NANOS}. */
  public synchronized void read(boolean force) {
    long now = System.nanoTime();
    if (!force && lastNanos >= 0 && now - lastReadAt < READ_EVERY_NANOS) {
      return;
    }
    long samples = samplesSoFar.getAsLong();
    long cpu = cpuNanos();
    if (cpu < 0) {
      return;
    }
    lastReadAt = now;
    if (firstNanos < 0) {
      firstNanos = cpu;
      firstSamples = samples;
    }
    lastNanos = Math.max(lastNanos, cpu);
    lastSamples = samples;
  }

  /** When the next reading is due, on the {@link System#nanoTime()} clock. */
  synchronized long nextReadAt() {
    return lastReadAt + READ_EVERY_NANOS;
  }

  /** {@code target_cpu_ns} and {@code target_cpu_samples}, or nothing if never read. */
  public synchronized Map<String, Long> counters() {
    if (firstNanos < 0) {
      return Map.of();
    }
    return Map.of(HostCounters.TARGET_CPU_NS.name(), lastNanos - firstNanos,
        HostCounters.TARGET_CPU_SAMPLES.name(), lastSamples - firstSamples);
  }

  /** The threads' CPU time so far, or -1 if the process cannot be read. */
  long cpuNanos() {
    try {
      var view = proc.forPid(pid);
      long fromTicks = -1;
      if (threads.isEmpty()) {
        TaskStat stat = view.stat();
        fromTicks = (stat.utime() + stat.stime()) * TICK_NANOS;
        if (stat.numThreads() > MAX_TASKS_READ) {
          return fromTicks;
        }
      }
      List<Integer> tids = threads.isEmpty() ? view.taskIds() : List.copyOf(threads);
      if (tids.size() > MAX_TASKS_READ) {
        return fromTicks;
      }
      long sum = 0;
      for (int tid : tids) {
        long run = schedstatRunNanos(tid);
        if (run < 0) {
          TaskStat t = view.taskStat(tid);
          run = (t.utime() + t.stime()) * TICK_NANOS;
        }
        sum += run;
      }
      return Math.max(sum, fromTicks);
    } catch (ProcReadException | RuntimeException e) {
      // Gone or unreadable: the run keeps its last reading.
      return -1;
    }
  }

  /** The first field of {@code schedstat} (ns on a CPU), -1 if absent (no CONFIG_SCHEDSTATS). */
  private long schedstatRunNanos(int tid) {
    Path file = proc.root().resolve(Integer.toString(pid)).resolve("task")
        .resolve(Integer.toString(tid)).resolve("schedstat");
    try (InputStream in = Files.newInputStream(file)) {
      byte[] b = in.readNBytes(MAX_SCHEDSTAT_BYTES);
      String text = new String(b, StandardCharsets.US_ASCII).trim();
      int space = text.indexOf(' ');
      long run = Long.parseLong(space < 0 ? text : text.substring(0, space));
      return run < 0 ? -1 : run;
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }
}
