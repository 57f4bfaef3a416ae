package dev.polystack.otel.otlp;

import io.opentelemetry.exporter.otlp.http.metrics.OtlpHttpMetricExporter;
import io.opentelemetry.exporter.otlp.http.metrics.OtlpHttpMetricExporterBuilder;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporterBuilder;
import io.opentelemetry.exporter.otlp.metrics.OtlpGrpcMetricExporter;
import io.opentelemetry.exporter.otlp.metrics.OtlpGrpcMetricExporterBuilder;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporter;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporterBuilder;
import io.opentelemetry.sdk.common.export.MemoryMode;
import io.opentelemetry.sdk.metrics.export.MetricExporter;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The SDK's OTLP span and metric exporters, configured like the profiles sender. The SDK logs
 * export failures through java.util.logging; those lines are silenced because polystack counts
 * failures and reports them once at the end. IMMUTABLE_DATA: with the reusable-data default
 * (SDK 1.68), a request that the sender retries is marshaled twice through one reused context
 * and fails with ArrayIndexOutOfBoundsException on the sender's thread (seen under load).
 */
final class SdkExporters {
  // Strong reference: java.util.logging keeps loggers weakly, and the level would be lost.
  private static final Logger SDK_LOGGER = Logger.getLogger("io.opentelemetry");

  static {
    SDK_LOGGER.setLevel(Level.OFF);
  }

  private SdkExporters() {}

  static SpanExporter spans(OtlpConfig config) {
    if (config.protocol() == OtlpProtocol.GRPC) {
      OtlpGrpcSpanExporterBuilder b = OtlpGrpcSpanExporter.builder()
          .setEndpoint(config.baseUri().toString()).setTimeout(config.timeout())
          .setCompression(config.gzip() ? "gzip" : "none")
          .setMemoryMode(MemoryMode.IMMUTABLE_DATA);
      config.headers().forEach(b::addHeader);
      trust(config, "traces", b::setTrustedCertificates);
      return b.build();
    }
    OtlpHttpSpanExporterBuilder b = OtlpHttpSpanExporter.builder()
        .setEndpoint(config.signalUri("/v1/traces").toString()).setTimeout(config.timeout())
        .setCompression(config.gzip() ? "gzip" : "none")
          .setMemoryMode(MemoryMode.IMMUTABLE_DATA);
    config.headers().forEach(b::addHeader);
    trust(config, "traces", b::setTrustedCertificates);
    return b.build();
  }

  static MetricExporter metrics(OtlpConfig config) {
    if (config.protocol() == OtlpProtocol.GRPC) {
      OtlpGrpcMetricExporterBuilder b = OtlpGrpcMetricExporter.builder()
          .setEndpoint(config.baseUri().toString()).setTimeout(config.timeout())
          .setCompression(config.gzip() ? "gzip" : "none")
          .setMemoryMode(MemoryMode.IMMUTABLE_DATA);
      config.headers().forEach(b::addHeader);
      trust(config, "metrics", b::setTrustedCertificates);
      return b.build();
    }
    OtlpHttpMetricExporterBuilder b = OtlpHttpMetricExporter.builder()
        .setEndpoint(config.signalUri("/v1/metrics").toString()).setTimeout(config.timeout())
        .setCompression(config.gzip() ? "gzip" : "none")
          .setMemoryMode(MemoryMode.IMMUTABLE_DATA);
    config.headers().forEach(b::addHeader);
    trust(config, "metrics", b::setTrustedCertificates);
    return b.build();
  }

  /** Hands the signal's CA file (if any) to an SDK builder, which then trusts only it. */
  private static void trust(OtlpConfig config, String signal, Consumer<byte[]> setter) {
    TrustedCertificates t = config.tls() ? config.trust(signal) : null;
    if (t != null) {
      setter.accept(t.pem());
    }
  }
}
