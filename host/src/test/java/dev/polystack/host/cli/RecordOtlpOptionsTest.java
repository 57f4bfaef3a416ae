package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.OtlpProtocol;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How record's --otlp-* flags and the OTEL_* variables combine. */
class RecordOtlpOptionsTest {

  private static RecordCommand command() {
    return new RecordCommand(null, null, null, null);
  }

  @Test
  void offUnlessAnEndpointIsGiven() {
    assertNull(command().otlpConfig(Map.of("OTEL_SERVICE_NAME", "x")));
  }

  @Test
  void theEndpointVariableTurnsItOn() {
    OtlpConfig c = command().otlpConfig(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT",
        "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"));
    assertEquals(OtlpProtocol.HTTP_PROTOBUF, c.protocol());
    assertEquals("http://collector:4318", c.baseUri().toString());
  }

  @Test
  void flagsWinOverVariablesAndHeadersAdd() {
    RecordCommand cmd = command();
    cmd.otlp.endpoint = "https://otlp.example.com:4317";
    cmd.otlp.protocol = "grpc";
    cmd.otlp.headers = List.of("authorization=Bearer a=b");
    OtlpConfig c = cmd.otlpConfig(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://other:4318",
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", "OTEL_EXPORTER_OTLP_HEADERS", "x=1"));
    assertEquals(OtlpProtocol.GRPC, c.protocol());
    assertEquals("https://otlp.example.com:4317", c.baseUri().toString());
    assertEquals(Map.of("x", "1", "authorization", "Bearer a=b"), c.headers());
  }

  @Test
  void mistakesAreUsageErrors() {
    RecordCommand cmd = command();
    cmd.otlp.protocol = "grpc";
    assertThrows(UsageException.class, () -> cmd.otlpConfig(Map.of()));
    RecordCommand bad = command();
    bad.otlp.endpoint = "http://c:4317";
    bad.otlp.headers = List.of("novalue");
    assertEquals("--otlp-header: expected NAME=VALUE (the text is not shown: it may hold a"
        + " credential)",
        assertThrows(UsageException.class, () -> bad.otlpConfig(Map.of())).getMessage());
    RecordCommand proto = command();
    proto.otlp.endpoint = "http://c:4317";
    proto.otlp.protocol = "http/json";
    assertThrows(UsageException.class, () -> proto.otlpConfig(Map.of()));
  }

  /** Issue 20: a malformed header printed the bearer token it held. */
  @Test
  void aMalformedHeaderNeverShowsItsText() {
    RecordCommand colon = command();
    colon.otlp.endpoint = "https://c:4317";
    colon.otlp.headers = List.of("x-tenant=7", "Authorization: Bearer s3cret");
    String message = assertThrows(UsageException.class, () -> colon.otlpConfig(Map.of()))
        .getMessage();
    assertEquals("--otlp-header (the 2nd): expected NAME=VALUE (the text is not shown: it may"
        + " hold a credential)", message);
    RecordCommand spaced = command();
    spaced.otlp.endpoint = "https://c:4317";
    spaced.otlp.headers = List.of("Authorization: Bearer s3cret=");
    message = assertThrows(UsageException.class, () -> spaced.otlpConfig(Map.of())).getMessage();
    assertFalse(message.contains("s3cret"), message);
    RecordCommand fromEnv = command();
    message = assertThrows(UsageException.class, () -> fromEnv.otlpConfig(Map.of(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4317",
        "OTEL_EXPORTER_OTLP_HEADERS", "Authorization: Bearer s3cret"))).getMessage();
    assertEquals("OTEL_EXPORTER_OTLP_HEADERS: item 1 (not shown: it may hold a credential) is"
        + " not KEY=VALUE", message);
  }

  /** Issue 20: headers went to an http:// receiver without a word. */
  @Test
  void headersOverPlainHttpGetOneWarningWithNamesOnly() {
    RecordCommand cmd = command();
    cmd.otlp.endpoint = "http://collector.example:4317";
    cmd.otlp.headers = List.of("authorization=Bearer s3cret", "x-tenant=7");
    List<String> warnings = new ArrayList<>();
    OtlpOptions.warnIfInClear(cmd.otlpConfig(Map.of()), warnings::add);
    assertEquals(List.of("OTLP header(s) authorization, x-tenant go to"
        + " http://collector.example:4317 unencrypted (plain http): anyone on the path can read"
        + " them; use an https:// endpoint (--otlp-ca-file for a private CA)"), warnings);

    warnings.clear();
    RecordCommand tls = command();
    tls.otlp.endpoint = "https://collector.example:4317";
    tls.otlp.headers = List.of("authorization=Bearer s3cret");
    OtlpOptions.warnIfInClear(tls.otlpConfig(Map.of()), warnings::add);
    RecordCommand none = command();
    none.otlp.endpoint = "http://collector.example:4317";
    OtlpOptions.warnIfInClear(none.otlpConfig(Map.of()), warnings::add);
    OtlpOptions.warnIfInClear(null, warnings::add);
    assertEquals(List.of(), warnings, "https, or nothing to protect");
  }

  @Test
  void aCaFileNeedsAnEndpointAndMustExistForHttps() {
    RecordCommand noEndpoint = command();
    noEndpoint.otlp.caFile = java.nio.file.Path.of("/etc/ca.pem");
    assertThrows(UsageException.class, () -> noEndpoint.otlpConfig(Map.of()));
    RecordCommand missing = command();
    missing.otlp.endpoint = "https://c:4317";
    missing.otlp.caFile = java.nio.file.Path.of("/nonexistent/ca.pem");
    assertEquals("CA file /nonexistent/ca.pem does not exist; check --otlp-ca-file",
        assertThrows(UsageException.class, () -> missing.otlpConfig(Map.of())).getMessage());
  }

  @Test
  void theQueueHoldsAMinuteOfIntervals() {
    assertEquals(6, OtlpExport.queueFor(Duration.ofSeconds(10)));
    assertEquals(120, OtlpExport.queueFor(Duration.ofMillis(500)));
    assertEquals(600, OtlpExport.queueFor(Duration.ofMillis(1)));
  }
}
