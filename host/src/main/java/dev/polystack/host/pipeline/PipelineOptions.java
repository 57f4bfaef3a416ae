package dev.polystack.host.pipeline;

import dev.polystack.host.sampling.SamplingOptions;
import java.util.Set;

/**
 * How the host-wide pipeline runs: what it samples, its bounds, and whether it is a record.
 *
 * @param stackBytes stack copied at each tick
 * @param commandLine put process.command_line on each resource
 * @param maxProcesses processes described at once
 * @param maxIntervalSamples samples one interval holds (over every process)
 * @param followChildren the processes selected ones create are selected too, by the kernel at
 *     their fork (always so for a selection by name)
 * @param followedUser a followed process is kept only if its real and effective user id are
 *     this one (record's --user); empty: any
 * @param record a record of chosen processes rather than the agent's watch: each selected
 *     process is described at the start and reported even without a sample, never let go
 *     for being idle, its CPU time read from /proc for its on-CPU rate, and polystack's
 *     threads kept off the CPUs it runs on (docs/architecture.md, "Threads")
 * @param threads in a record, the only threads whose ticks are walked (--tid); empty: all
 * @param allocMeanBytes allocations sampled instead of CPU ticks, one per this many bytes on
 *     average (0: every call); -1: CPU ticks
 */
public record PipelineOptions(int rateHz, int stackBytes, int maxDepth,
    ProcessSelection selection,
    boolean commandLine, int maxProcesses, int maxIntervalSamples, boolean followChildren,
    java.util.OptionalLong followedUser, boolean record, Set<Integer> threads,
    long allocMeanBytes) {
  public static final int DEFAULT_MAX_PROCESSES = 1024;
  public static final int DEFAULT_MAX_INTERVAL_SAMPLES = 1 << 18;

  public PipelineOptions(int rateHz, int stackBytes, int maxDepth, ProcessSelection selection,
      boolean commandLine, int maxProcesses, int maxIntervalSamples, boolean followChildren) {
    this(rateHz, stackBytes, maxDepth, selection, commandLine, maxProcesses,
        maxIntervalSamples, followChildren, java.util.OptionalLong.empty(), false, Set.of(), -1);
  }

  public PipelineOptions(int rateHz, int stackBytes, int maxDepth, ProcessSelection selection,
      boolean commandLine, int maxProcesses, int maxIntervalSamples, boolean followChildren,
      java.util.OptionalLong followedUser, boolean record, Set<Integer> threads) {
    this(rateHz, stackBytes, maxDepth, selection, commandLine, maxProcesses,
        maxIntervalSamples, followChildren, followedUser, record, threads, -1);
  }

  /**
   * The same, sampling allocations instead of CPU ticks: one sample per {@code meanBytes}
   * allocated on average (0: every call), in the selected processes (docs/allocations.md,
   * "In the agent").
   */
  public PipelineOptions withAllocations(long meanBytes) {
    if (meanBytes < 0) {
      throw new IllegalArgumentException("mean bytes must be >= 0: " + meanBytes);
    }
    if (selection.isHostWide() || !selection.cgroup().isEmpty()) {
      throw new IllegalArgumentException("allocations are probed in processes selected by pid,"
          + " comm or match");
    }
    return new PipelineOptions(rateHz, stackBytes, maxDepth, selection, commandLine,
        maxProcesses, maxIntervalSamples, followChildren, followedUser, record, threads,
        meanBytes);
  }

  /** Whether allocations are sampled instead of CPU ticks. */
  boolean allocations() {
    return allocMeanBytes >= 0;
  }

  public PipelineOptions {
    java.util.Objects.requireNonNull(followedUser, "followedUser");
    threads = Set.copyOf(threads);
    if (!threads.isEmpty() && !record) {
      throw new IllegalArgumentException("threads are chosen in a record only");
    }
    java.util.Objects.requireNonNull(selection, "selection");
    if (maxProcesses < 1 || maxIntervalSamples < 1) {
      throw new IllegalArgumentException("bounds must be positive");
    }
    new SamplingOptions(rateHz, 0, false, threads, maxDepth, stackBytes); // validates
  }

  SamplingOptions sampling() {
    return new SamplingOptions(rateHz, 0, false, threads, maxDepth, stackBytes);
  }

  boolean follows() {
    return followChildren || selection.byName();
  }
}

/**
 * One process's samples of one interval, the resource they belong to, and its figures so far.
 */
