package dev.polystack.otel.counters;

import java.util.Locale;
import java.util.Map;

/**
 * A run's sampling rate three ways, each named: the rate asked for, the rate per second the
 * sampled threads were on a CPU (their CPU time read from /proc,
 * {@link HostCounters#TARGET_CPU_NS}, so a mostly sleeping target still shows about the
 * requested rate), and the rate per wall second and sampled thread (low for a sleeping target:
 * threads are sampled only while running).
 *
 * @param requestedHz 1e9 / the sampling period
 * @param onCpuHz samples per second of the threads' CPU time; NaN when it was not measured
 * @param wallHz samples per wall second and sampled thread
 */
public record SamplingRates(double requestedHz, double onCpuHz, double wallHz) {

  /** Below this much CPU time the on-CPU rate is not stated: /proc's 10 ms ticks would dominate. */
  static final long MIN_CPU_NANOS = 1_000_000L;

  public SamplingRates {
    if (!(requestedHz > 0)) {
      throw new IllegalArgumentException("requested rate must be positive: " + requestedHz);
    }
  }

  /**
   * @param periodNanos the recording's sampling period
   * @param counters the recording's counters (target_cpu_ns and target_cpu_samples, if there)
   * @param samples samples in the recording
   * @param threads threads sampled
   * @param wallNanos how long the run lasted
   */
  public static SamplingRates of(long periodNanos, Map<String, Long> counters, long samples,
      int threads, long wallNanos) {
    return new SamplingRates(1e9 / periodNanos, onCpuHz(counters),
        threads == 0 || wallNanos <= 0 ? 0 : samples / (wallNanos / 1e9) / threads);
  }

  /** Samples per second of the sampled threads' CPU time, NaN when not measured. */
  public static double onCpuHz(Map<String, Long> counters) {
    Long cpu = counters.get(HostCounters.TARGET_CPU_NS.name());
    Long samples = counters.get(HostCounters.TARGET_CPU_SAMPLES.name());
    if (cpu == null || samples == null || cpu < MIN_CPU_NANOS) {
      return Double.NaN;
    }
    return samples / (cpu / 1e9);
  }

  /** {@code 99 Hz requested, 97.8 Hz on-CPU, 3.6 Hz wall per thread}. */
  public String describe() {
    return String.format(Locale.ROOT, "%s Hz requested, %s, %.1f Hz wall per thread",
        Math.abs(requestedHz - Math.rint(requestedHz)) < 1e-3
            ? String.valueOf((long) Math.rint(requestedHz))
            : String.format(Locale.ROOT, "%.1f", requestedHz),
        Double.isNaN(onCpuHz) ? "on-CPU rate not measured"
            : String.format(Locale.ROOT, "%.1f Hz on-CPU", onCpuHz),
        wallHz);
  }
}
