package dev.polystack.otel.otlp;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.Status;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.zip.GZIPOutputStream;

/** OTLP/HTTP with binary protobuf: {@code POST /v1development/profiles}. */
final class HttpProfilesSender implements ProfilesSender {
  static final String PATH = "/v1development/profiles";
  /** The status codes the OTLP specification calls retryable. */
  static final Set<Integer> RETRYABLE = Set.of(429, 502, 503, 504);

  private final OtlpConfig config;
  private final URI uri;
  private final HttpClient client;

  HttpProfilesSender(OtlpConfig config) {
    this.config = config;
    this.uri = config.signalUri(PATH);
    HttpClient.Builder b = HttpClient.newBuilder()
        .connectTimeout(config.timeout())
        .version(HttpClient.Version.HTTP_1_1);
    TrustedCertificates trust = config.tls() ? config.trust("profiles") : null;
    if (trust != null) {
      b.sslContext(trust.sslContext());
    }
    this.client = b.build();
  }

  @Override
  public ExportResult export(ExportProfilesServiceRequest request) {
    byte[] body = config.gzip() ? gzip(request.toByteArray()) : request.toByteArray();
    HttpRequest.Builder b = HttpRequest.newBuilder(uri)
        .timeout(config.timeout())
        .header("Content-Type", "application/x-protobuf")
        .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    if (config.gzip()) {
      b.header("Content-Encoding", "gzip");
    }
    config.headers().forEach(b::header);
    HttpRequest httpRequest = b.build();
    return Retrier.run(config.retry(), attempt -> send(httpRequest, attempt));
  }

  private Retrier.Outcome send(HttpRequest request, int attempt) {
    HttpResponse<byte[]> response;
    try {
      response = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
    } catch (HttpTimeoutException e) {
      return new Retrier.Retryable("no answer from " + uri + " within " + config.timeout(),
          null);
    } catch (IOException e) {
      String tls = TrustedCertificates.handshakeFailure(e);
      if (tls != null) {
        return new Retrier.Done(ExportResult.failure(uri + ": " + tls, attempt));
      }
      return new Retrier.Retryable("cannot reach " + uri + ": " + describe(e), null);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Retrier.Done(ExportResult.failure("interrupted", attempt));
    }
    int code = response.statusCode();
    if (code >= 200 && code < 300) {
      try {
        return new Retrier.Done(Responses.of(
            ExportProfilesServiceResponse.parseFrom(response.body()), attempt));
      } catch (InvalidProtocolBufferException e) {
        return new Retrier.Done(new ExportResult(true, 0,
            "accepted, but the response is not an ExportProfilesServiceResponse", attempt));
      }
    }
    String message = "HTTP " + code + " from " + uri + ": " + errorMessage(response);
    if (RETRYABLE.contains(code)) {
      return new Retrier.Retryable(message, retryAfter(response));
    }
    return new Retrier.Done(ExportResult.failure(message, attempt));
  }

  /** The google.rpc.Status message OTLP/HTTP puts in error bodies, else the body as text. */
  static String errorMessage(HttpResponse<byte[]> response) {
    byte[] body = response.body();
    String type = response.headers().firstValue("Content-Type").orElse("");
    if (type.startsWith("application/x-protobuf")) {
      try {
        String m = Status.parseFrom(body).getMessage();
        if (!m.isEmpty()) {
          return m;
        }
      } catch (InvalidProtocolBufferException e) {
        // fall through to text
      }
    }
    String text = new String(body, 0, Math.min(body.length, 500), StandardCharsets.UTF_8)
        .replaceAll("\\s+", " ").trim();
    return text.isEmpty() ? "(empty body)" : text;
  }

  /** Retry-After in seconds (the HTTP-date form is rare from collectors and ignored). */
  static Duration retryAfter(HttpResponse<?> response) {
    return response.headers().firstValue("Retry-After").map(v -> {
      try {
        return Duration.ofSeconds(Math.max(0, Long.parseLong(v.trim())));
      } catch (NumberFormatException e) {
        return null;
      }
    }).orElse(null);
  }

  private static String describe(IOException e) {
    String m = e.getMessage();
    if (m == null && e.getCause() != null) {
      m = e.getCause().toString();
    }
    return m == null ? e.getClass().getSimpleName() : m;
  }

  private static byte[] gzip(byte[] data) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(data.length / 4 + 64);
    try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
      gz.write(data);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  @Override
  public String target() {
    return uri.toString();
  }

  @Override
  public void close() {
    // HttpClient has no close() before Java 21; its threads are daemons and idle out.
  }
}
