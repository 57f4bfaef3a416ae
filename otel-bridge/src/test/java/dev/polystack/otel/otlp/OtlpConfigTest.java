package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OtlpConfigTest {

  @Test
  void defaultsAreGrpcToLocalhost() {
    OtlpConfig c = OtlpConfig.fromEnvironment(Map.of());
    assertEquals(OtlpProtocol.GRPC, c.protocol());
    assertEquals("http://localhost:4317", c.baseUri().toString());
    assertTrue(c.gzip());
    assertEquals(Duration.ofSeconds(10), c.timeout());
    assertFalse(c.tls());
  }

  @Test
  void readsTheStandardVariables() {
    OtlpConfig c = OtlpConfig.fromEnvironment(Map.of(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "https://otlp.example.com:443/",
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc, x-tenant=7",
        "OTEL_EXPORTER_OTLP_TIMEOUT", "2500",
        "OTEL_SERVICE_NAME", "api"));
    assertEquals(OtlpProtocol.HTTP_PROTOBUF, c.protocol());
    assertEquals("https://otlp.example.com:443/v1development/profiles",
        c.signalUri("/v1development/profiles").toString());
    assertEquals(Map.of("Authorization", "Bearer abc", "x-tenant", "7"), c.headers());
    assertEquals(Duration.ofMillis(2500), c.timeout());
    assertEquals("api", c.serviceName());
    assertTrue(c.tls());
  }

  @Test
  void badValuesNameTheVariable() {
    assertEquals("OTLP protocol 'http/json' is not supported, expected grpc or http/protobuf",
        assertThrows(IllegalArgumentException.class, () -> OtlpConfig.fromEnvironment(
            Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"))).getMessage());
    assertTrue(assertThrows(IllegalArgumentException.class, () -> OtlpConfig.fromEnvironment(
        Map.of("OTEL_EXPORTER_OTLP_TIMEOUT", "10s"))).getMessage()
        .startsWith("OTEL_EXPORTER_OTLP_TIMEOUT=10s"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> OtlpConfig.defaults().withEndpoint("localhost:4317")).getMessage()
        .contains("expected http://HOST:PORT"));
  }

  @Test
  void caFilesComeFromTheVariablesPerSignalAndTheFlagWinsOverAll() {
    OtlpConfig c = OtlpConfig.fromEnvironment(Map.of(
        "OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/all.pem",
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "/etc/traces.pem"));
    assertEquals(Path.of("/etc/traces.pem"), c.caFile("traces").orElseThrow());
    assertEquals(Path.of("/etc/all.pem"), c.caFile("profiles").orElseThrow());
    OtlpConfig flag = c.withCaFile(Path.of("/tmp/flag.pem"));
    for (String signal : OtlpConfig.SIGNALS) {
      assertEquals(Path.of("/tmp/flag.pem"), flag.caFile(signal).orElseThrow());
    }
    assertTrue(OtlpConfig.defaults().caFile("metrics").isEmpty());
  }

  @Test
  void aCaFileIsCheckedBeforeUse(@TempDir Path dir) throws Exception {
    Path missing = dir.resolve("missing.pem");
    assertEquals("CA file " + missing + " does not exist", assertThrows(
        IllegalArgumentException.class,
        () -> OtlpConfig.defaults().withCaFile(missing).checkCaFiles()).getMessage());
    Path junk = Files.writeString(dir.resolve("junk.pem"), "not a certificate\n");
    assertThrows(IllegalArgumentException.class,
        () -> OtlpConfig.defaults().withCaFile(junk).checkCaFiles());
  }

  /** Issue 20: header values are credentials; no message or toString may show them. */
  @Test
  void headerValuesNeverAppearInMessagesOrToString() {
    for (String headers : List.of("Authorization: Bearer s3cret", "Authorization Bearer=s3cret",
        "authorization=Bearer%zzs3cret", "authorization=Bearer%0As3cret")) {
      String message = assertThrows(IllegalArgumentException.class,
          () -> OtlpConfig.fromEnvironment(Map.of("OTEL_EXPORTER_OTLP_HEADERS", headers)))
          .getMessage();
      assertFalse(message.contains("s3cret") || message.contains("Bearer"), message);
      assertTrue(message.startsWith("OTEL_EXPORTER_OTLP_HEADERS: "), message);
    }
    String bad = assertThrows(IllegalArgumentException.class,
        () -> OtlpConfig.defaults().withHeader("Authorization: Bearer s3cret", "x")).getMessage();
    assertFalse(bad.contains("s3cret"), bad);

    OtlpConfig c = OtlpConfig.fromEnvironment(Map.of(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "https://user:pa55word@otlp.example.com:443",
        "OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret,x-tenant=7"));
    String text = c.toString();
    assertFalse(text.contains("s3cret") || text.contains("pa55word"), text);
    assertTrue(text.contains("[authorization, x-tenant]"), text);
    assertFalse(assertThrows(IllegalArgumentException.class,
        () -> OtlpConfig.defaults().withEndpoint("ftp://user:pa55word@host")).getMessage()
        .contains("pa55word"));
  }

  @Test
  void credentialsInClearAreHeadersOverPlainHttp() {
    assertTrue(OtlpConfig.defaults().withEndpoint("http://c:4317").withHeader("x-key", "1")
        .credentialsInClear());
    assertFalse(OtlpConfig.defaults().withEndpoint("https://c:4317").withHeader("x-key", "1")
        .credentialsInClear());
    assertFalse(OtlpConfig.defaults().withEndpoint("http://c:4317").credentialsInClear());
  }
}
