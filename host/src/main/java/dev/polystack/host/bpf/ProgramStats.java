package dev.polystack.host.bpf;

/**
 * The kernel's run statistics of the capture program (bpf_prog_info); both zero unless
 * {@code kernel.bpf_stats_enabled} is 1, which costs a little on every run and is off by default.
 */
public record ProgramStats(long runCount, long runTimeNanos) {
  /** Mean time per run in nanoseconds; 0 when nothing was counted. */
  public double meanNanos() {
    return runCount == 0 ? 0 : (double) runTimeNanos / runCount;
  }
}
