package dev.polystack.otel.otlp;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.metrics.ObservableDoubleMeasurement;
import io.opentelemetry.api.metrics.ObservableLongMeasurement;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The health of {@code polystack agent} as OTLP metrics, read at every export interval and once
 * more at {@link #close}; the resource is the agent itself ({@code service.name} polystack):
 * <ul>
 *   <li>{@code polystack.samples}, {@code polystack.samples.lost} by {@code reason},
 *       {@code polystack.stack.errors} by {@code reason}: as {@link SessionMetrics};
 *   <li>{@code polystack.agent.processes}: processes described now;
 *       {@code polystack.agent.processes.seen}: described since the start;
 *   <li>{@code polystack.export.requests}, {@code polystack.export.samples.dropped},
 *       {@code polystack.export.requests.failed}, {@code polystack.export.profiles.rejected};
 *   <li>{@code process.cpu.time} and {@code process.memory.usage}: the agent's own CPU
 *       (seconds) and resident memory (bytes).
 * </ul>
 */
public final class AgentMetrics implements AutoCloseable {

  /** The agent's figures so far (cumulative, bar the gauges). */
  public record Snapshot(long samples, Map<String, Long> lostSamples,
      Map<String, Long> stackErrors, long processes, long processesSeen,
      ProfileExporter.Stats export, double cpuSeconds, long rssBytes) {
    public Snapshot {
      lostSamples = Map.copyOf(lostSamples);
      stackErrors = Map.copyOf(stackErrors);
      Objects.requireNonNull(export, "export");
    }
  }

  private final SdkMeterProvider provider;
  private final ExportTally tally = new ExportTally();

  private AgentMetrics(OtlpConfig config, OtlpResource resource, Duration interval,
      Supplier<Snapshot> source) {
    Objects.requireNonNull(source, "source");
    provider = MeterSetup.provider(config, resource, interval, tally);
    Meter meter = MeterSetup.meter(provider);
    ObservableLongMeasurement samples = counter(meter, "polystack.samples", "{sample}",
        "Samples taken");
    ObservableLongMeasurement lost = counter(meter, "polystack.samples.lost", "{sample}",
        "Samples not taken or dropped, by reason");
    ObservableLongMeasurement errors = counter(meter, "polystack.stack.errors", "{sample}",
        "Stacks ending in an error frame, by reason");
    ObservableLongMeasurement processes = meter.gaugeBuilder("polystack.agent.processes")
        .ofLongs().setUnit("{process}").setDescription("Processes described now")
        .buildObserver();
    ObservableLongMeasurement seen = counter(meter, "polystack.agent.processes.seen",
        "{process}", "Processes described since the start");
    ObservableLongMeasurement requests = counter(meter, "polystack.export.requests",
        "{request}", "Profile export requests accepted");
    ObservableLongMeasurement dropped = counter(meter, "polystack.export.samples.dropped",
        "{sample}", "Samples that did not reach the OTLP receiver");
    ObservableLongMeasurement failed = counter(meter, "polystack.export.requests.failed",
        "{request}", "Profile export requests that failed");
    ObservableLongMeasurement rejected = counter(meter, "polystack.export.profiles.rejected",
        "{profile}", "Profiles the receiver rejected (partial success)");
    ObservableDoubleMeasurement cpu = meter.counterBuilder("process.cpu.time").ofDoubles()
        .setUnit("s").setDescription("CPU time of the agent").buildObserver();
    ObservableLongMeasurement rss = meter.gaugeBuilder("process.memory.usage").ofLongs()
        .setUnit("By").setDescription("Resident memory of the agent").buildObserver();
    meter.batchCallback(() -> {
      Snapshot s = source.get();
      samples.record(s.samples());
      s.lostSamples().forEach((reason, n) -> lost.record(n,
          Attributes.of(SessionMetrics.REASON, reason)));
      s.stackErrors().forEach((reason, n) -> errors.record(n,
          Attributes.of(SessionMetrics.REASON, reason)));
      processes.record(s.processes());
      seen.record(s.processesSeen());
      requests.record(s.export().requests());
      dropped.record(s.export().samplesDropped());
      failed.record(s.export().requestsFailed());
      rejected.record(s.export().rejected());
      cpu.record(s.cpuSeconds());
      rss.record(s.rssBytes());
    }, samples, lost, errors, processes, seen, requests, dropped, failed, rejected, cpu, rss);
  }

  private static ObservableLongMeasurement counter(Meter meter, String name, String unit,
      String description) {
    return meter.counterBuilder(name).setUnit(unit).setDescription(description).buildObserver();
  }

  /** Starts exporting every {@code interval}; {@code source} is read on the SDK's thread. */
  public static AgentMetrics start(OtlpConfig config, OtlpResource resource, Duration interval,
      Supplier<Snapshot> source) {
    return new AgentMetrics(config, resource, interval, source);
  }

  /**
   * Exports the final figures and stops, waiting at most {@code timeout}.
   *
   * @return empty if every metrics export succeeded, else why the last one failed
   */
  public String close(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    provider.forceFlush().join(timeout.toMillis(), TimeUnit.MILLISECONDS);
    // One budget for both: an unreachable receiver must not hold a stopping service longer.
    long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
    provider.shutdown().join(left, TimeUnit.MILLISECONDS);
    if (tally.failures() > 0) {
      return tally.failures() + " metrics export(s) failed: " + tally.lastFailure();
    }
    return "";
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(10));
  }
}
