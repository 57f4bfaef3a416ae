package dev.polystack.otel.otlp;

import dev.polystack.otel.counters.Counter;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.counters.HostCounters;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.metrics.ObservableLongMeasurement;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The statistics and loss counters of a {@code record} session as OTLP metrics (cumulative
 * counters), read from the session at every export interval and once more at {@link #close}.
 * Which counter goes where follows its declaration ({@link Counters#classify}):
 * <ul>
 *   <li>{@code polystack.samples}: samples taken;
 *   <li>{@code polystack.samples.lost} by {@code reason}: the losses (queue_full, ring_lost,
 *       thread_gone, ...);
 *   <li>{@code polystack.stack.errors} by {@code reason}: stacks that end in an error frame;
 *   <li>{@code polystack.capture} by {@code name}: the tick capture's figures (bpf mode);
 *   <li>{@code polystack.notes} by {@code name} and {@code kind}: how polystack and its
 *       plug-ins read the target, not losses;
 *   <li>{@code polystack.export.samples.dropped}, {@code polystack.export.requests.failed},
 *       {@code polystack.export.profiles.rejected}: what the profiles export lost.
 * </ul>
 */
public final class SessionMetrics implements AutoCloseable {
  static final AttributeKey<String> REASON = AttributeKey.stringKey("reason");
  static final AttributeKey<String> NAME = AttributeKey.stringKey("name");
  static final AttributeKey<String> KIND = AttributeKey.stringKey("kind");

  /**
   * The session's figures so far (cumulative).
   *
   * @param counters the session's counters by name, of every kind (losses, capture figures,
   *     notes): each is reported as its declaration says
   */
  public record Snapshot(long samples, Map<String, Long> counters,
      Map<String, Long> stackErrors, ProfileExporter.Stats export) {
    public Snapshot {
      counters = Map.copyOf(counters);
      stackErrors = Map.copyOf(stackErrors);
    }
  }

  private final SdkMeterProvider provider;
  private final ExportTally tally = new ExportTally();

  private SessionMetrics(OtlpConfig config, OtlpResource resource, Duration interval,
      Supplier<Snapshot> source) {
    Objects.requireNonNull(source, "source");
    provider = MeterSetup.provider(config, resource, interval, tally);
    Meter meter = MeterSetup.meter(provider);
    ObservableLongMeasurement samples = meter.counterBuilder("polystack.samples")
        .setUnit("{sample}").setDescription("Samples taken").buildObserver();
    ObservableLongMeasurement lost = meter.counterBuilder("polystack.samples.lost")
        .setUnit("{sample}").setDescription("Samples not taken or dropped, by reason")
        .buildObserver();
    ObservableLongMeasurement errors = meter.counterBuilder("polystack.stack.errors")
        .setUnit("{sample}").setDescription("Stacks ending in an error frame, by reason")
        .buildObserver();
    ObservableLongMeasurement capture = meter.counterBuilder("polystack.capture")
        .setUnit("{event}").setDescription("What the tick capture did (bpf mode), by name")
        .buildObserver();
    ObservableLongMeasurement notes = meter.counterBuilder("polystack.notes")
        .setUnit("{event}").setDescription("How polystack and its plug-ins read the target, by"
            + " name; not losses").buildObserver();
    ObservableLongMeasurement dropped = declared(meter, HostCounters.EXPORT_SAMPLES_DROPPED);
    ObservableLongMeasurement failed = declared(meter, HostCounters.EXPORT_REQUESTS_FAILED);
    ObservableLongMeasurement rejected = declared(meter, HostCounters.EXPORT_PROFILES_REJECTED);
    meter.batchCallback(() -> {
      Snapshot s = source.get();
      samples.record(s.samples());
      s.counters().forEach((name, n) -> {
        Counter c = Counters.classify(name);
        switch (c.kind()) {
          case LOSS -> lost.record(n, Attributes.of(REASON, name));
          case ERROR_FRAME -> errors.record(n, Attributes.of(REASON, name));
          case CAPTURE_FIGURE -> capture.record(n, Attributes.of(NAME, name));
          case NOTE, PLUGIN_NOTE -> notes.record(n, Attributes.of(NAME, name, KIND, c.kind().id()));
        }
      });
      s.stackErrors().forEach((reason, n) -> errors.record(n, Attributes.of(REASON, reason)));
      if (s.export() != null) {
        dropped.record(s.export().samplesDropped());
        failed.record(s.export().requestsFailed());
        rejected.record(s.export().rejected());
      }
    }, samples, lost, errors, capture, notes, dropped, failed, rejected);
  }

  /** The metric of a declared counter: {@code polystack.} and its name with dots for '_'. */
  private static ObservableLongMeasurement declared(Meter meter, Counter c) {
    return meter.counterBuilder("polystack." + c.name().replace('_', '.'))
        .setUnit("{" + c.unit() + "}").setDescription(c.description()).buildObserver();
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
    return tally.metricsOutcome(timeout);
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(10));
  }
}
