package dev.polystack.otel.otlp;

import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceResponse;

/** ExportProfilesServiceResponse to ExportResult: partial_success is what users must see. */
final class Responses {
  private Responses() {}

  static ExportResult of(ExportProfilesServiceResponse response, int attempts) {
    if (!response.hasPartialSuccess()) {
      return ExportResult.success(attempts);
    }
    var partial = response.getPartialSuccess();
    return new ExportResult(true, partial.getRejectedProfiles(), partial.getErrorMessage(),
        attempts);
  }
}
