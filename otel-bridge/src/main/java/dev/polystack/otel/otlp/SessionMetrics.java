package dev.polystack.otel.otlp;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.metrics.ObservableLongMeasurement;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.export.PeriodicMetricReader;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The statistics and loss counters of a {@code record} session as OTLP metrics (cumulative
 * counters), read from the session at every export interval and once more at {@link #close}:
 * <ul>
 *   <li>{@code polystack.samples}: samples taken;
 *   <li>{@code polystack.samples.lost} by {@code reason}: samples not taken or dropped
 *       (queue_full, ring_lost, thread_gone, ...);
 *   <li>{@code polystack.stack.errors} by {@code reason}: stacks that end in an error frame;
 *   <li>{@code polystack.export.samples.dropped}, {@code polystack.export.requests.failed},
 *       {@code polystack.export.profiles.rejected}: what the profiles export lost.
 * </ul>
 */
public final class SessionMetrics implements AutoCloseable {
  static final AttributeKey<String> REASON = AttributeKey.stringKey("reason");

  /** The session's figures so far (cumulative). */
  public record Snapshot(long samples, Map<String, Long> lostSamples,
      Map<String, Long> stackErrors, ProfileExporter.Stats export) {
    public Snapshot {
      lostSamples = Map.copyOf(lostSamples);
      stackErrors = Map.copyOf(stackErrors);
    }
  }

  private final SdkMeterProvider provider;
  private final ExportTally tally = new ExportTally();

  private SessionMetrics(OtlpConfig config, OtlpResource resource, Duration interval,
      Supplier<Snapshot> source) {
    Objects.requireNonNull(source, "source");
    provider = SdkMeterProvider.builder()
        .setResource(resource.toSdk())
        .registerMetricReader(PeriodicMetricReader.builder(
            tally.wrap(SdkExporters.metrics(config))).setInterval(interval).build())
        .build();
    Meter meter = provider.meterBuilder(OtlpResource.SCOPE_NAME)
        .setInstrumentationVersion(OtlpResource.version()).build();
    ObservableLongMeasurement samples = meter.counterBuilder("polystack.samples")
        .setUnit("{sample}").setDescription("Samples taken").buildObserver();
    ObservableLongMeasurement lost = meter.counterBuilder("polystack.samples.lost")
        .setUnit("{sample}").setDescription("Samples not taken or dropped, by reason")
        .buildObserver();
    ObservableLongMeasurement errors = meter.counterBuilder("polystack.stack.errors")
        .setUnit("{sample}").setDescription("Stacks ending in an error frame, by reason")
        .buildObserver();
    ObservableLongMeasurement dropped = meter.counterBuilder(
        "polystack.export.samples.dropped").setUnit("{sample}")
        .setDescription("Samples that did not reach the OTLP receiver").buildObserver();
    ObservableLongMeasurement failed = meter.counterBuilder("polystack.export.requests.failed")
        .setUnit("{request}").setDescription("Profile export requests that failed")
        .buildObserver();
    ObservableLongMeasurement rejected = meter.counterBuilder(
        "polystack.export.profiles.rejected").setUnit("{profile}")
        .setDescription("Profiles the receiver rejected (partial success)").buildObserver();
    meter.batchCallback(() -> {
      Snapshot s = source.get();
      samples.record(s.samples());
      s.lostSamples().forEach((reason, n) -> lost.record(n, Attributes.of(REASON, reason)));
      s.stackErrors().forEach((reason, n) -> errors.record(n, Attributes.of(REASON, reason)));
      if (s.export() != null) {
        dropped.record(s.export().samplesDropped());
        failed.record(s.export().requestsFailed());
        rejected.record(s.export().rejected());
      }
    }, samples, lost, errors, dropped, failed, rejected);
  }

  /** Starts exporting every {@code interval}; {@code source} is read on the SDK's thread. */
  public static SessionMetrics start(OtlpConfig config, OtlpResource resource, Duration interval,
      Supplier<Snapshot> source) {
    return new SessionMetrics(config, resource, interval, source);
  }

  /**
   * Exports the final figures and stops, waiting at most {@code timeout}.
   *
   * @return empty if every metrics export succeeded, else why the last one failed
   */
  public String close(Duration timeout) {
    provider.forceFlush().join(timeout.toMillis(), TimeUnit.MILLISECONDS);
    provider.shutdown().join(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (tally.failures() > 0) {
      return tally.failures() + " metrics export(s) failed: " + tally.lastFailure();
    }
    return tally.batches() == 0 ? "no metrics export completed within " + timeout : "";
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(10));
  }
}
