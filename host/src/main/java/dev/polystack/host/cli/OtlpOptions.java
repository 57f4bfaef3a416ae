package dev.polystack.host.cli;

import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.OtlpProtocol;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
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
      for (int i = 0; i < headers.size(); i++) {
        // Never echo the text: a malformed header is often a pasted token.
        String which = "--otlp-header" + (headers.size() > 1 ? " (the " + ordinal(i + 1)
            + ")" : "");
        String header = headers.get(i);
        int eq = header.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException(which + ": expected NAME=VALUE (the text is not"
              + " shown: it may hold a credential)");
        }
        String name = header.substring(0, eq).trim();
        String value = header.substring(eq + 1).trim();
        OtlpConfig.checkHeader(which, name, value);
        c = c.withHeader(name, value);
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
   * One warning when headers (taken to be credentials: tokens, API keys) would go to an
   * {@code http://} receiver, readable by anyone on the path. Names only, never values.
   */
  static void warnIfInClear(OtlpConfig config, Consumer<String> warn) {
    if (config != null && config.credentialsInClear()) {
      URI uri = config.baseUri();
      warn.accept("OTLP header(s) " + String.join(", ", config.headers().keySet()) + " go to "
          + uri.getScheme() + "://" + uri.getHost() + (uri.getPort() < 0 ? "" : ":"
          + uri.getPort()) + " unencrypted (plain http): anyone on the path can read them; use"
          + " an https:// endpoint (--otlp-ca-file for a private CA)");
    }
  }

  private static String ordinal(int n) {
    return n + (n % 100 >= 11 && n % 100 <= 13 ? "th"
        : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th");
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
