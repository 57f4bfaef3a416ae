package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.rpc.Status;
import com.sun.net.httpserver.HttpServer;
import dev.polystack.otel.local.TestRecordings;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesPartialSuccess;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceResponse;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The HTTP transport against a JDK HTTP server that answers what each test scripts. */
class HttpProfilesSenderTest {
  private record Answer(int code, String retryAfter, byte[] body) {}

  private HttpServer server;
  private final Deque<Answer> answers = new ArrayDeque<>();
  private final List<ExportProfilesServiceRequest> received = new ArrayList<>();
  private final List<Long> times = new ArrayList<>();
  private final List<String> headers = new ArrayList<>();

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/v1development/profiles", ex -> {
      times.add(System.nanoTime());
      headers.add(ex.getRequestHeaders().getFirst("X-Tenant"));
      assertEquals("gzip", ex.getRequestHeaders().getFirst("Content-Encoding"));
      received.add(ExportProfilesServiceRequest.parseFrom(
          new GZIPInputStream(ex.getRequestBody())));
      Answer a = answers.isEmpty() ? new Answer(200, null, new byte[0]) : answers.poll();
      if (a.retryAfter() != null) {
        ex.getResponseHeaders().add("Retry-After", a.retryAfter());
      }
      ex.getResponseHeaders().add("Content-Type", "application/x-protobuf");
      ex.sendResponseHeaders(a.code(), a.body().length == 0 ? -1 : a.body().length);
      ex.getResponseBody().write(a.body());
      ex.close();
    });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private ProfilesSender sender() {
    return ProfilesSender.create(OtlpConfig.defaults()
        .withProtocol(OtlpProtocol.HTTP_PROTOBUF)
        .withEndpoint("http://127.0.0.1:" + server.getAddress().getPort() + "/")
        .withHeader("X-Tenant", "t1")
        .withTimeout(Duration.ofSeconds(5))
        .withRetry(new RetryPolicy(3, Duration.ofMillis(50), Duration.ofMillis(100), 2)));
  }

  private static ExportProfilesServiceRequest request() {
    var r = TestRecordings.service();
    return ProfilesMapper.toRequest(r, OtlpResource.forTarget(r.target(),
        OtlpConfig.defaults()));
  }

  @Test
  void postsGzippedProtobufWithHeaders() {
    ExportResult result = sender().export(request());
    assertTrue(result.complete(), result.toString());
    assertEquals(request(), received.get(0));
    assertEquals("t1", headers.get(0));
  }

  @Test
  void retriesUnavailableAndHonoursRetryAfter() {
    answers.add(new Answer(503, "1", new byte[0]));
    answers.add(new Answer(429, null, new byte[0]));
    ExportResult result = sender().export(request());
    assertTrue(result.complete(), result.toString());
    assertEquals(3, result.attempts());
    assertTrue(times.get(1) - times.get(0) >= 900_000_000L, "Retry-After: 1 was not honoured");
  }

  @Test
  void rejectionCarriesTheReceiversMessageAndIsNotRetried() {
    answers.add(new Answer(400, null, Status.newBuilder().setCode(3)
        .setMessage("profiles: invalid stack index 99").build().toByteArray()));
    ExportResult result = sender().export(request());
    assertFalse(result.accepted());
    assertEquals(1, result.attempts());
    assertTrue(result.message().contains("HTTP 400"), result.message());
    assertTrue(result.message().endsWith("profiles: invalid stack index 99"), result.message());
  }

  @Test
  void partialSuccessIsReported() {
    answers.add(new Answer(200, null, ExportProfilesServiceResponse.newBuilder()
        .setPartialSuccess(ExportProfilesPartialSuccess.newBuilder().setRejectedProfiles(1)
            .setErrorMessage("one profile too old")).build().toByteArray()));
    ExportResult result = sender().export(request());
    assertTrue(result.accepted());
    assertEquals(1, result.rejected());
    assertEquals("one profile too old", result.message());
  }

  @Test
  void givesUpAfterTheLastAttempt() {
    for (int i = 0; i < 3; i++) {
      answers.add(new Answer(502, null, "bad gateway".getBytes()));
    }
    ExportResult result = sender().export(request());
    assertFalse(result.accepted());
    assertEquals(3, result.attempts());
    assertTrue(result.message().contains("gave up after 3 attempts"), result.message());
  }
}
