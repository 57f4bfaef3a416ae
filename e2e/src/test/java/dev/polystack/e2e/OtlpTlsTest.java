package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.otlp.OtlpProtocol;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * OTLP over TLS to a real Collector whose receivers present a certificate from a CA made here
 * with openssl: trusted through --otlp-ca-file or OTEL_EXPORTER_OTLP_CERTIFICATE, profiles
 * (record) and spans (vdso) arrive over https for both transports; an untrusted certificate
 * fails the run with one line and exit code 1, and the target runs to its normal end.
 */
class OtlpTlsTest {
  private static final String LUA = """
      function spin() local t0 = os.clock() while os.clock() - t0 < 0.5 do end end
      spin()
      """;

  @TempDir static Path certs;
  private static Path ca;
  private static Path otherCa;
  private static Collector collector;

  @TempDir Path tmp;

  @BeforeAll
  static void startCollectorWithTls() throws Exception {
    ca = newCa("ca");
    otherCa = newCa("other");
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", file("server.key"), "-out",
        file("server.csr"), "-subj", "/CN=127.0.0.1");
    Files.writeString(certs.resolve("san.ext"), "subjectAltName=IP:127.0.0.1\n");
    openssl("x509", "-req", "-in", file("server.csr"), "-CA", ca.toString(), "-CAkey",
        file("ca.key"), "-CAcreateserial", "-out", file("server.pem"), "-days", "2",
        "-extfile", file("san.ext"));
    collector = Collector.start(certs.resolve("server.pem"), certs.resolve("server.key"));
  }

  @AfterAll
  static void stopCollector() {
    if (collector != null) {
      collector.close();
    }
  }

  private static Path newCa(String name) throws Exception {
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", file(name + ".key"),
        "-out", file(name + ".pem"), "-days", "2", "-subj", "/CN=polystack test " + name);
    return certs.resolve(name + ".pem");
  }

  private static String file(String name) {
    return certs.resolve(name).toString();
  }

  private static void openssl(String... args) throws Exception {
    List<String> command = new java.util.ArrayList<>(List.of("openssl"));
    command.addAll(List.of(args));
    Tools.Output o = Tools.run(60, null, command);
    if (o.exitCode() != 0) {
      throw new AssertionError("openssl " + String.join(" ", args) + ": " + o.stderr());
    }
  }

  private static String endpoint(OtlpProtocol protocol) {
    return protocol == OtlpProtocol.GRPC ? collector.grpcEndpoint() : collector.httpEndpoint();
  }

  @ParameterizedTest
  @EnumSource(OtlpProtocol.class)
  void profilesArriveOverHttpsWithTheCaFromTheFlag(OtlpProtocol protocol) throws Exception {
    String service = "tls-record-" + protocol.ordinal() + "-" + System.nanoTime();
    Distribution.Result r = Distribution.run(null, Map.of("OTEL_SERVICE_NAME", service,
        "OTEL_EXPORTER_OTLP_TIMEOUT", VdsoOtlpTest.SLOW_HOST_TIMEOUT_MS),
        "record", "--otlp-endpoint", endpoint(protocol), "--otlp-protocol", protocol.id(),
        "--otlp-ca-file", ca.toString(), "--export-interval", "500ms", "--", "luajit",
        lua().toString());
    assertEquals(0, r.exitCode(), r.stderr());
    List<ExportProfilesServiceRequest> mine = collector.await(collector::profiles,
        p -> !ofService(p, service).isEmpty()).stream()
        .filter(p -> !ofService(List.of(p), service).isEmpty()).toList();
    assertTrue(Collector.sampleCount(mine) > 0, collector.log());
  }

  @ParameterizedTest
  @EnumSource(OtlpProtocol.class)
  void spansArriveOverHttpsWithTheCaFromTheVariable(OtlpProtocol protocol) throws Exception {
    String service = "tls-vdso-" + protocol.ordinal() + "-" + System.nanoTime();
    Distribution.Result r = Distribution.run(null, Map.of("OTEL_SERVICE_NAME", service,
        "OTEL_EXPORTER_OTLP_CERTIFICATE", ca.toString(), "OTEL_EXPORTER_OTLP_TIMEOUT",
        VdsoOtlpTest.SLOW_HOST_TIMEOUT_MS),
        VdsoOtlpTest.vdso(tmp.resolve("calls.json"), "--otlp-endpoint", endpoint(protocol),
            "--otlp-protocol", protocol.id()));
    assertEquals(0, r.exitCode(), r.stderr());
    VdsoOtlpTest.assertSpansMatchTheWorkload(collector, service, r.stdout(),
        VdsoOtlpTest.OK_CALLS, VdsoOtlpTest.FAILED_CALLS);
  }

  @ParameterizedTest
  @EnumSource(OtlpProtocol.class)
  void aCertificateFromAnotherCaFailsInOneLineAndTheTargetRunsToItsEnd(OtlpProtocol protocol)
      throws Exception {
    Path out = tmp.resolve("calls.json");
    Distribution.Result r = Distribution.run(VdsoOtlpTest.vdso(out, "--otlp-endpoint",
        endpoint(protocol), "--otlp-protocol", protocol.id(), "--otlp-ca-file",
        otherCa.toString()));
    assertUntrusted(r);
    assertTrue(Files.readString(out).contains("\"target_exit\":\"exited(0)\""),
        "the target ran to its normal end");
    assertEquals(2, VdsoCalls.parse(r.stdout()).size(), r.stdout());
  }

  @Test
  void withoutTheCaTheSystemStoreRefusesTheCollectorAndRecordSaysSo() throws Exception {
    Distribution.Result r = Distribution.run("record", "--otlp-endpoint",
        collector.grpcEndpoint(), "--format", "folded", "-o", tmp.resolve("p.folded").toString(),
        "--", "luajit", lua().toString());
    assertUntrusted(r);
    assertTrue(r.stderr().contains("polystack: target exited with code 0"), r.stderr());
    assertTrue(Files.size(tmp.resolve("p.folded")) > 0, "the local profile is still written");
  }

  @Test
  void aCaFileThatIsNotThereIsAUsageError() throws Exception {
    Distribution.Result r = Distribution.run(null, Map.of("OTEL_EXPORTER_OTLP_CERTIFICATE",
        tmp.resolve("missing.pem").toString()), VdsoOtlpTest.vdso(tmp.resolve("c.json"),
        "--otlp-endpoint", collector.grpcEndpoint()));
    assertEquals(2, r.exitCode(), r.stderr());
    assertEquals(1, r.stderrLines().size(), r.stderr());
    assertTrue(r.stderr().contains("missing.pem does not exist"), r.stderr());
  }

  /** Exit 1 and a last line that names the endpoint, the trust problem and the remedy. */
  private static void assertUntrusted(Distribution.Result r) {
    assertEquals(1, r.exitCode(), r.stderr());
    String last = r.stderrLines().get(r.stderrLines().size() - 1);
    assertTrue(last.startsWith("polystack: OTLP export to "), last);
    assertTrue(last.contains("certification path") || last.contains("not trusted"), last);
    assertTrue(last.contains("--otlp-ca-file"), last);
  }

  private static List<ExportProfilesServiceRequest> ofService(
      List<ExportProfilesServiceRequest> all, String service) {
    return all.stream().filter(p -> p.getResourceProfilesList().stream().anyMatch(rp ->
        rp.getResource().getAttributesList().stream().anyMatch(kv ->
            service.equals(kv.getValue().getStringValue())
            || kv.getValue().hasStringValueStrindex() && service.equals(
                p.getDictionary().getStringTable(kv.getValue().getStringValueStrindex())))))
        .toList();
  }

  private Path lua() throws IOException {
    Path script = tmp.resolve("spin.lua");
    Files.writeString(script, LUA);
    return script;
  }
}
