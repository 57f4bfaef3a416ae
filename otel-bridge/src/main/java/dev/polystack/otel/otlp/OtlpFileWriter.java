package dev.polystack.otel.otlp;

import dev.polystack.otel.local.ProfileWriter;
import dev.polystack.otel.model.Recording;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Map;

/**
 * {@code --format otlp}: the binary ExportProfilesServiceRequest that would be sent to a
 * Collector, for offline use ({@code protoc --decode}, replay with a gRPC or HTTP client).
 * The resource comes from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES like a live export.
 */
public final class OtlpFileWriter implements ProfileWriter {
  private final Map<String, String> environment;

  /** A writer whose resource follows {@code environment} (usually System.getenv()). */
  public OtlpFileWriter(Map<String, String> environment) {
    this.environment = Map.copyOf(environment);
  }

  @Override
  public void write(Recording recording, OutputStream out) throws IOException {
    OtlpConfig config;
    try {
      config = OtlpConfig.fromEnvironment(environment);
    } catch (IllegalArgumentException e) {
      throw new IOException(e.getMessage(), e);
    }
    ProfilesMapper.toRequest(recording, OtlpResource.forTarget(recording.target(), config))
        .writeTo(out);
    out.flush();
  }
}
