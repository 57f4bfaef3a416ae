package dev.polystack.otel.otlp;

import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.MetadataUtils;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceResponse;
import io.opentelemetry.proto.collector.profiles.v1development.ProfilesServiceGrpc;
import java.net.URI;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/** OTLP/gRPC: ProfilesService/Export over grpc-java, TLS when the endpoint is https. */
final class GrpcProfilesSender implements ProfilesSender {
  /** The codes the OTLP specification calls retryable. */
  static final Set<Status.Code> RETRYABLE = Set.of(Status.Code.UNAVAILABLE,
      Status.Code.CANCELLED, Status.Code.DEADLINE_EXCEEDED, Status.Code.ABORTED,
      Status.Code.OUT_OF_RANGE, Status.Code.DATA_LOSS, Status.Code.RESOURCE_EXHAUSTED);

  private final OtlpConfig config;
  private final ManagedChannel channel;
  private final ProfilesServiceGrpc.ProfilesServiceBlockingStub stub;
  private final String target;

  GrpcProfilesSender(OtlpConfig config) {
    this.config = config;
    URI uri = config.baseUri();
    int port = uri.getPort() > 0 ? uri.getPort() : config.tls() ? 443 : 4317;
    this.target = uri.getHost() + ":" + port;
    ChannelCredentials credentials = config.tls() ? tls(config.trust("profiles"))
        : InsecureChannelCredentials.create();
    this.channel = Grpc.newChannelBuilderForAddress(uri.getHost(), port, credentials)
        .maxInboundMessageSize(4 << 20)
        .build();
    Metadata headers = new Metadata();
    config.headers().forEach((k, v) ->
        headers.put(Metadata.Key.of(k.toLowerCase(java.util.Locale.ROOT),
            Metadata.ASCII_STRING_MARSHALLER), v));
    ProfilesServiceGrpc.ProfilesServiceBlockingStub s = ProfilesServiceGrpc.newBlockingStub(channel)
        .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
    this.stub = config.gzip() ? s.withCompression("gzip") : s;
  }

  private static ChannelCredentials tls(TrustedCertificates trust) {
    if (trust == null) {
      return TlsChannelCredentials.create();
    }
    try {
      return TlsChannelCredentials.newBuilder()
          .trustManager(new java.io.ByteArrayInputStream(trust.pem())).build();
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("cannot use CA file " + trust.file() + ": "
          + e.getMessage());
    }
  }

  @Override
  public ExportResult export(ExportProfilesServiceRequest request) {
    return Retrier.run(config.retry(), attempt -> {
      try {
        ExportProfilesServiceResponse response = stub
            .withDeadlineAfter(config.timeout().toMillis(), TimeUnit.MILLISECONDS)
            .export(request);
        return new Retrier.Done(Responses.of(response, attempt));
      } catch (StatusRuntimeException e) {
        Status status = e.getStatus();
        String tls = TrustedCertificates.handshakeFailure(status.getCause());
        if (tls != null) {
          return new Retrier.Done(ExportResult.failure("gRPC " + status.getCode() + ": " + tls,
              attempt));
        }
        String message = "gRPC " + status.getCode()
            + (status.getDescription() == null ? "" : ": " + status.getDescription());
        if (status.getCause() != null && status.getDescription() == null) {
          message += ": " + status.getCause().getMessage();
        }
        return RETRYABLE.contains(status.getCode())
            ? new Retrier.Retryable(message, null)
            : new Retrier.Done(ExportResult.failure(message, attempt));
      }
    });
  }

  @Override
  public String target() {
    return target + " (grpc)";
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
