package dev.polystack.otel.otlp;

/** The OTLP transports, by the names OTEL_EXPORTER_OTLP_PROTOCOL uses. */
public enum OtlpProtocol {
  /** OTLP/gRPC, default port 4317. */
  GRPC("grpc", "http://localhost:4317"),
  /** OTLP/HTTP with binary protobuf bodies, default port 4318. */
  HTTP_PROTOBUF("http/protobuf", "http://localhost:4318");

  private final String id;
  private final String defaultEndpoint;

  OtlpProtocol(String id, String defaultEndpoint) {
    this.id = id;
    this.defaultEndpoint = defaultEndpoint;
  }

  public String id() {
    return id;
  }

  public String defaultEndpoint() {
    return defaultEndpoint;
  }

  /** {@code grpc} or {@code http/protobuf}; IllegalArgumentException naming both otherwise. */
  public static OtlpProtocol parse(String text) {
    for (OtlpProtocol p : values()) {
      if (p.id.equals(text)) {
        return p;
      }
    }
    throw new IllegalArgumentException("OTLP protocol '" + text
        + "' is not supported, expected grpc or http/protobuf");
  }
}
