package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
}
