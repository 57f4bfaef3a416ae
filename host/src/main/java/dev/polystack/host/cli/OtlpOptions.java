package dev.polystack.host.cli;

import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.OtlpProtocol;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The OTLP flags {@code record} and {@code vdso} share, and how they combine with the standard
 * OTEL_* variables: a flag wins over its variable, headers add up.
 */
final class OtlpOptions {

  @Option(names = "--otlp-endpoint", paramLabel = "URL",
      description = "Stream to this OTLP receiver (http[s]://HOST:PORT; default:"
          + " OTEL_EXPORTER_OTLP_ENDPOINT, which also turns streaming on).")
  String endpoint;

  @Option(names = "--otlp-protocol", paramLabel = "PROTOCOL",
      description = "grpc or http/protobuf (default: OTEL_EXPORTER_OTLP_PROTOCOL, else grpc).")
  String protocol;

  @Option(names = "--otlp-header", paramLabel = "K=V",
      description = "A header for every OTLP request (repeatable; adds to"
          + " OTEL_EXPORTER_OTLP_HEADERS).")
  List<String> headers = new ArrayList<>();

  @Option(names = "--otlp-ca-file", paramLabel = "FILE",
      description = "PEM file of the certificate authorities to trust for an https endpoint"
          + " instead of the system's (default: OTEL_EXPORTER_OTLP_CERTIFICATE).")
  Path caFile;

  @Option(names = "--export-interval", paramLabel = "D", converter = Durations.class,
      defaultValue = "10s",
      description = "How often data is sent while running (default: ${DEFAULT-VALUE}).")
  Duration interval = Duration.ofSeconds(10);

  /** The OTLP configuration when streaming is on (a flag or the endpoint variable), else null. */
  OtlpConfig config(Map<String, String> env) {
    boolean on = endpoint != null
        || !env.getOrDefault("OTEL_EXPORTER_OTLP_ENDPOINT", "").isBlank();
    if (!on) {
      if (protocol != null || !headers.isEmpty() || caFile != null) {
        throw new UsageException("--otlp-protocol, --otlp-header and --otlp-ca-file need"
            + " --otlp-endpoint URL (or OTEL_EXPORTER_OTLP_ENDPOINT)");
      }
      return null;
    }
    if (interval.isNegative() || interval.isZero()) {
      throw new UsageException("--export-interval must be positive");
    }
    try {
      OtlpConfig c = OtlpConfig.fromEnvironment(env);
      if (protocol != null) {
        c = c.withProtocol(OtlpProtocol.parse(protocol));
      }
      if (endpoint != null) {
        c = c.withEndpoint(endpoint);
      }
      for (String header : headers) {
        int eq = header.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException("--otlp-header " + header + ": expected NAME=VALUE");
        }
        c = c.withHeader(header.substring(0, eq).trim(), header.substring(eq + 1).trim());
      }
      if (caFile != null) {
        c = c.withCaFile(caFile);
      }
      if (c.tls()) {
        c.checkCaFiles();
      }
      return c;
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage()
          + (caFile != null && e.getMessage().contains("CA file") ? "; check --otlp-ca-file"
          : e.getMessage().contains("CA file") ? "; check OTEL_EXPORTER_OTLP_*CERTIFICATE"
          : ""));
    }
  }

  /**
   * What to do about an export failure: for an untrusted certificate, where to give the CA;
   * otherwise {@code otherwise}.
   */
  static String advice(String problem, String otherwise) {
    return problem.contains("PKIX") || problem.contains("not trusted")
        ? "; if the receiver's certificate comes from a private CA, give that CA with"
            + " --otlp-ca-file FILE (or OTEL_EXPORTER_OTLP_CERTIFICATE)"
        : otherwise;
  }
}
