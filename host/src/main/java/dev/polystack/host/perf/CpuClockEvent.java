package dev.polystack.host.perf;

/** The cpu-clock sampling event perf mode samples with. */
public final class CpuClockEvent {
  /** What each sample carries: where, which thread, when, on which CPU, registers, stack. */
  public static final long SAMPLE_TYPE = PerfConstants.SAMPLE_IP | PerfConstants.SAMPLE_TID
      | PerfConstants.SAMPLE_TIME | PerfConstants.SAMPLE_CPU | PerfConstants.SAMPLE_REGS_USER
      | PerfConstants.SAMPLE_STACK_USER;

  private CpuClockEvent() {}

  /**
   * A disabled cpu-clock sampling event with the user registers and {@code stackBytes} of the
   * stack copied at each sample, timed on the clock of System.nanoTime().
   */
  public static PerfEventAttr.Builder attr(long periodNanos, int stackBytes) {
    // cpu-clock counts only while the thread runs, which is the default "on-CPU only". A fixed
    // period equals what sample_freq would give: the kernel turns a cpu-clock frequency into
    // the period 1e9/freq anyway (perf_swevent_init_hrtimer).
    return PerfEventAttr.builder()
        .type(PerfConstants.TYPE_SOFTWARE)
        .config(PerfConstants.COUNT_SW_CPU_CLOCK)
        .samplePeriod(periodNanos)
        .sampleType(SAMPLE_TYPE)
        .sampleRegsUser(PerfConstants.REGS_GENERAL)
        .sampleStackUser(stackBytes)
        .excludeKernel(true)
        .excludeHv(true)
        // One offset makes these times wall time (MonotonicClock.epochOffsetNanos).
        .clockid(PerfConstants.CLOCK_MONOTONIC)
        .disabled(true);
  }
}
