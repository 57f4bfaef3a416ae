package dev.polystack.otel.otlp;

import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.export.PeriodicMetricReader;
import java.time.Duration;

/**
 * The meter provider the agent's and a session's health metrics share in shape: the process's
 * resource, one periodic reader to the OTLP endpoint whose exports are tallied, polystack's
 * instrumentation scope.
 */
final class MeterSetup {
  private MeterSetup() {}

  static SdkMeterProvider provider(OtlpConfig config, OtlpResource resource, Duration interval,
      ExportTally tally) {
    return SdkMeterProvider.builder()
        .setResource(resource.toSdk())
        .registerMetricReader(PeriodicMetricReader.builder(
            tally.wrap(SdkExporters.metrics(config))).setInterval(interval).build())
        .build();
  }

  static Meter meter(SdkMeterProvider provider) {
    return provider.meterBuilder(OtlpResource.SCOPE_NAME)
        .setInstrumentationVersion(OtlpResource.version()).build();
  }
}
