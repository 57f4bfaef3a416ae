package dev.polystack.otel.otlp;

import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;

/**
 * Sends ExportProfilesServiceRequests to one OTLP endpoint, with the retries of the config's
 * {@link RetryPolicy}. Blocking; one caller at a time. Never throws for what the network or the
 * receiver does: that is the {@link ExportResult}.
 */
public interface ProfilesSender extends AutoCloseable {

  ExportResult export(ExportProfilesServiceRequest request);

  /** Where requests go, for messages. */
  String target();

  @Override
  void close();

  /** The sender for {@code config}'s protocol. */
  static ProfilesSender create(OtlpConfig config) {
    return switch (config.protocol()) {
      case GRPC -> new GrpcProfilesSender(config);
      case HTTP_PROTOBUF -> new HttpProfilesSender(config);
    };
  }
}
