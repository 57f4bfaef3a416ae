package dev.polystack.host.embed;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Everything a {@link Profiler} runs with. Built by {@link Profiler#builder()}, which fills the
 * defaults below; the constructor validates every field.
 *
 * @param rateHz samples per second per CPU, 1 to 1000 ({@link #DEFAULT_RATE_HZ})
 * @param selection the processes profiled
 * @param interval how often the listener gets an interval, 100 ms to 1 hour ({@link
 *     #DEFAULT_INTERVAL})
 * @param pluginPath directories of third-party plug-in jars, loaded besides the bundled ones
 *     (LuaJIT, vDSO) as {@code polystack --plugin-path} loads them
 * @param commandLine whether each process's resource carries {@code process.command_line}
 *     (off by default: command lines can hold secrets)
 * @param maxProcesses processes described at once; beyond, the one that ran least recently is
 *     let go (counted as {@code process_evicted})
 * @param maxIntervalSamples samples one interval holds over every process; beyond, counted as
 *     {@code interval_full}
 * @param listenerQueue intervals waiting for a slow listener; beyond, dropped and counted
 *     ({@link ProfilerStats#intervalsDropped()})
 */
public record ProfilerConfig(int rateHz, Selection selection, Duration interval,
    List<Path> pluginPath, boolean commandLine, int maxProcesses, int maxIntervalSamples,
    int listenerQueue) {
  /** What the OpenTelemetry eBPF profiler samples at. */
  public static final int DEFAULT_RATE_HZ = 20;
  /** What {@code polystack agent --export-interval} defaults to. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(10);
  /** As {@code polystack agent}. */
  public static final int DEFAULT_MAX_PROCESSES = 1024;
  /** As {@code polystack agent}. */
  public static final int DEFAULT_MAX_INTERVAL_SAMPLES = 1 << 18;
  /** As the OTLP exporter's queue: a minute of intervals at 10 s. */
  public static final int DEFAULT_LISTENER_QUEUE = 6;
  static final Duration MIN_INTERVAL = Duration.ofMillis(100);
  static final Duration MAX_INTERVAL = Duration.ofHours(1);

  /** Validates every field; {@link IllegalArgumentException} names the one that is wrong. */
  public ProfilerConfig {
    if (rateHz < 1 || rateHz > 1000) {
      throw new IllegalArgumentException("rate " + rateHz + " Hz: must be 1..1000 per CPU");
    }
    Objects.requireNonNull(selection, "selection");
    Objects.requireNonNull(interval, "interval");
    if (interval.compareTo(MIN_INTERVAL) < 0 || interval.compareTo(MAX_INTERVAL) > 0) {
      throw new IllegalArgumentException("interval " + interval + ": must be 100 ms to 1 hour");
    }
    pluginPath = List.copyOf(Objects.requireNonNull(pluginPath, "pluginPath"));
    if (maxProcesses < 1 || maxProcesses > 1 << 16) {
      throw new IllegalArgumentException("maxProcesses " + maxProcesses + ": must be 1..65536");
    }
    if (maxIntervalSamples < 1 || maxIntervalSamples > 1 << 24) {
      throw new IllegalArgumentException("maxIntervalSamples " + maxIntervalSamples
          + ": must be 1..16777216");
    }
    if (listenerQueue < 1 || listenerQueue > 1000) {
      throw new IllegalArgumentException("listenerQueue " + listenerQueue + ": must be 1..1000");
    }
  }
}
