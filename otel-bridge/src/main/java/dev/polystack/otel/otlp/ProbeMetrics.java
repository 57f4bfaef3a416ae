package dev.polystack.otel.otlp;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.HistogramData;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.data.SumData;
import io.opentelemetry.sdk.metrics.export.MetricExporter;
import io.opentelemetry.sdk.resources.Resource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The figures of a {@code polystack probe} run as OTLP metrics, cumulative from the run's start,
 * exported every interval and once at {@link #close}:
 * <ul>
 *   <li>{@code polystack.probe.calls} (sum, by {@code probe.site}): hits counted in the kernel;
 *   <li>{@code polystack.probe.duration} (histogram in seconds, by {@code probe.site}; latency
 *       runs): the kernel's log2 buckets as explicit bounds 2, 4, 8, ... ns, so counts are
 *       exact rather than re-recorded per call;
 *   <li>{@code polystack.probe.records.lost} (sum, by {@code reason}).
 * </ul>
 * The points are built from the kernel's maps, not through instruments: a histogram instrument
 * would need one call per hit, and hits are counted in the kernel.
 */
public final class ProbeMetrics implements AutoCloseable {
  static final AttributeKey<String> SITE = AttributeKey.stringKey("probe.site");
  /** Buckets the kernel keeps (bucket i: [2^i, 2^(i+1)) ns). */
  public static final int BUCKETS = 64;
  private static final List<Double> BOUNDS = bounds();

  /**
   * One site's figures so far.
   *
   * @param buckets the latency buckets, or null when the run counts only
   */
  public record Site(String name, long calls, long[] buckets, long sumNanos, long maxNanos) {
    public Site {
      Objects.requireNonNull(name, "name");
      if (buckets != null && buckets.length != BUCKETS) {
        throw new IllegalArgumentException(buckets.length + " buckets, not " + BUCKETS);
      }
    }
  }

  /** The run's figures so far. */
  public record Snapshot(List<Site> sites, Map<String, Long> lost) {
    public Snapshot {
      sites = List.copyOf(sites);
      lost = Map.copyOf(lost);
    }
  }

  private final Resource resource;
  private final InstrumentationScopeInfo scope;
  private final MetricExporter exporter;
  private final ExportTally tally = new ExportTally();
  private final Supplier<Snapshot> source;
  private final long startEpochNanos;
  private final ScheduledExecutorService timer;
  private boolean closed;

  private ProbeMetrics(OtlpConfig config, OtlpResource resource, Duration interval,
      Supplier<Snapshot> source) {
    this.resource = resource.toSdk();
    this.scope = InstrumentationScopeInfo.builder(OtlpResource.SCOPE_NAME)
        .setVersion(OtlpResource.version()).build();
    this.exporter = tally.wrap(SdkExporters.metrics(config));
    this.source = Objects.requireNonNull(source, "source");
    this.startEpochNanos = epochNanos();
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "polystack-probe-metrics");
      t.setDaemon(true);
      return t;
    });
    long ms = interval.toMillis();
    timer.scheduleAtFixedRate(this::exportNow, ms, ms, TimeUnit.MILLISECONDS);
  }

  /** Starts exporting every {@code interval}; {@code source} is read on the exporter's thread. */
  public static ProbeMetrics start(OtlpConfig config, OtlpResource resource, Duration interval,
      Supplier<Snapshot> source) {
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("export interval must be positive, got " + interval);
    }
    return new ProbeMetrics(config, resource, interval, source);
  }

  private synchronized void exportNow() {
    if (closed) {
      return;
    }
    Snapshot s = source.get();
    if (s != null) {
      exporter.export(metrics(s, startEpochNanos, epochNanos()));
    }
  }

  /** The metric data of {@code s}: cumulative points from {@code start} to {@code now}. */
  List<MetricData> metrics(Snapshot s, long start, long now) {
    List<LongPointData> calls = new ArrayList<>();
    List<HistogramPointData> durations = new ArrayList<>();
    for (Site site : s.sites()) {
      Attributes a = Attributes.of(SITE, site.name());
      calls.add(LongPointData.create(start, now, a, site.calls()));
      if (site.buckets() != null) {
        List<Long> counts = new ArrayList<>(BUCKETS);
        long n = 0;
        for (long c : site.buckets()) {
          counts.add(c);
          n += c;
        }
        durations.add(HistogramPointData.create(start, now, a, site.sumNanos() / 1e9,
            false, 0, n > 0, site.maxNanos() / 1e9, BOUNDS, counts));
      }
    }
    List<LongPointData> lost = new ArrayList<>();
    s.lost().forEach((reason, n) -> lost.add(LongPointData.create(start, now,
        Attributes.of(SessionMetrics.REASON, reason), n)));
    List<MetricData> out = new ArrayList<>();
    out.add(ProbeMetricData.longSum(resource, scope, "polystack.probe.calls",
        "Calls of probed sites, counted in the kernel", "{call}",
        SumData.createLongSumData(true, AggregationTemporality.CUMULATIVE, calls)));
    if (!durations.isEmpty()) {
      out.add(ProbeMetricData.histogram(resource, scope,
          "polystack.probe.duration", "Entry-to-return time of probed calls", "s",
          HistogramData.create(AggregationTemporality.CUMULATIVE, durations)));
    }
    out.add(ProbeMetricData.longSum(resource, scope, "polystack.probe.records.lost",
        "Hits not counted or records not delivered, by reason", "{record}",
        SumData.createLongSumData(true, AggregationTemporality.CUMULATIVE, lost)));
    return out;
  }

  /** Upper bounds of buckets 0..62 in seconds: 2, 4, ..., 2^63 ns. */
  private static List<Double> bounds() {
    List<Double> b = new ArrayList<>(BUCKETS - 1);
    for (int i = 1; i < BUCKETS; i++) {
      b.add(Math.scalb(1.0, i) / 1e9);
    }
    return List.copyOf(b);
  }

  private static long epochNanos() {
    java.time.Instant now = java.time.Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  /**
   * Exports the final figures and stops, waiting at most {@code timeout}.
   *
   * @return empty if every export succeeded, else why the last one failed
   */
  public String close(Duration timeout) {
    timer.shutdownNow();
    synchronized (this) {
      if (closed) {
        return "";
      }
      Snapshot s = source.get();
      if (s != null) {
        exporter.export(metrics(s, startEpochNanos, epochNanos()))
            .join(timeout.toMillis(), TimeUnit.MILLISECONDS);
      }
      closed = true;
    }
    exporter.shutdown().join(timeout.toMillis(), TimeUnit.MILLISECONDS);
    return tally.metricsOutcome(timeout);
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(10));
  }
}
