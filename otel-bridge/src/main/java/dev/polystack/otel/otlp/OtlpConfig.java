package dev.polystack.otel.otlp;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Where and how to send OTLP: the standard OTEL_* variables, overridden by command-line flags.
 *
 * @param protocol grpc (default, as in the Java SDK's autoconfiguration) or http/protobuf
 * @param endpoint base URL ({@code http[s]://host:port}); empty for the protocol's default. For
 *     http/protobuf the signal path ({@code /v1development/profiles}, {@code /v1/traces}, ...) is
 *     appended, as the specification says for OTEL_EXPORTER_OTLP_ENDPOINT
 * @param headers sent with every request (authentication, tenant ids): credentials, so they
 *     never appear in {@link #toString} or in an error message, only their names do
 * @param timeout per attempt
 * @param gzip compress request bodies
 * @param serviceName OTEL_SERVICE_NAME, or empty
 * @param resourceAttributes OTEL_RESOURCE_ATTRIBUTES
 * @param retry retries on retryable answers
 * @param caFiles PEM files of the certificate authorities to trust over https instead of the
 *     JDK's trust store, by signal ({@code traces}, {@code metrics}, {@code profiles}) and for
 *     every signal (key {@code ""}): OTEL_EXPORTER_OTLP[_SIGNAL]_CERTIFICATE
 */
public record OtlpConfig(OtlpProtocol protocol, String endpoint, Map<String, String> headers,
    Duration timeout, boolean gzip, String serviceName, Map<String, String> resourceAttributes,
    RetryPolicy retry, Map<String, Path> caFiles) {

  /** The signals that may have their own CA file. */
  public static final List<String> SIGNALS = List.of("traces", "metrics", "profiles");

  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

  public OtlpConfig {
    Objects.requireNonNull(protocol, "protocol");
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(serviceName, "serviceName");
    Objects.requireNonNull(retry, "retry");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("OTLP timeout must be positive, got " + timeout);
    }
    headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
    resourceAttributes = Collections.unmodifiableMap(new LinkedHashMap<>(resourceAttributes));
    for (String signal : caFiles.keySet()) {
      if (!signal.isEmpty() && !SIGNALS.contains(signal)) {
        throw new IllegalArgumentException("no OTLP signal '" + signal + "'");
      }
    }
    caFiles = Map.copyOf(caFiles);
    if (!endpoint.isEmpty()) {
      parseEndpoint(endpoint);
    }
  }

  /** The defaults: grpc to localhost:4317, gzip, 10 s, no headers. */
  public static OtlpConfig defaults() {
    return new OtlpConfig(OtlpProtocol.GRPC, "", Map.of(), DEFAULT_TIMEOUT, true, "", Map.of(),
        RetryPolicy.DEFAULT, Map.of());
  }

  /**
   * The configuration the OTEL_EXPORTER_OTLP_{ENDPOINT,PROTOCOL,HEADERS,TIMEOUT,COMPRESSION,
   * CERTIFICATE}, OTEL_EXPORTER_OTLP_{TRACES,METRICS,PROFILES}_CERTIFICATE, OTEL_SERVICE_NAME
   * and OTEL_RESOURCE_ATTRIBUTES variables of {@code env} describe.
   *
   * @throws IllegalArgumentException naming the variable that is wrong
   */
  public static OtlpConfig fromEnvironment(Map<String, String> env) {
    OtlpConfig c = defaults();
    String protocol = env.getOrDefault("OTEL_EXPORTER_OTLP_PROTOCOL", "").trim();
    if (!protocol.isEmpty()) {
      c = c.withProtocol(OtlpProtocol.parse(protocol));
    }
    String endpoint = env.getOrDefault("OTEL_EXPORTER_OTLP_ENDPOINT", "").trim();
    if (!endpoint.isEmpty()) {
      c = c.withEndpoint(endpoint);
    }
    Map<String, String> headers = parseList("OTEL_EXPORTER_OTLP_HEADERS",
        env.getOrDefault("OTEL_EXPORTER_OTLP_HEADERS", ""), true);
    headers.forEach((name, value) -> checkHeader("OTEL_EXPORTER_OTLP_HEADERS", name, value));
    Duration timeout = c.timeout();
    String t = env.getOrDefault("OTEL_EXPORTER_OTLP_TIMEOUT", "").trim();
    if (!t.isEmpty()) {
      try {
        timeout = Duration.ofMillis(Long.parseLong(t));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("OTEL_EXPORTER_OTLP_TIMEOUT=" + t
            + " is not a number of milliseconds");
      }
    }
    String compression = env.getOrDefault("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip").trim();
    if (!compression.equals("gzip") && !compression.equals("none")) {
      throw new IllegalArgumentException("OTEL_EXPORTER_OTLP_COMPRESSION=" + compression
          + " is not supported, expected gzip or none");
    }
    Map<String, Path> caFiles = new LinkedHashMap<>();
    String all = env.getOrDefault("OTEL_EXPORTER_OTLP_CERTIFICATE", "").trim();
    if (!all.isEmpty()) {
      caFiles.put("", Path.of(all));
    }
    for (String signal : SIGNALS) {
      String v = env.getOrDefault("OTEL_EXPORTER_OTLP_" + signal.toUpperCase(Locale.ROOT)
          + "_CERTIFICATE", "").trim();
      if (!v.isEmpty()) {
        caFiles.put(signal, Path.of(v));
      }
    }
    return new OtlpConfig(c.protocol(), c.endpoint(), headers, timeout,
        compression.equals("gzip"), env.getOrDefault("OTEL_SERVICE_NAME", "").trim(),
        parseList("OTEL_RESOURCE_ATTRIBUTES", env.getOrDefault("OTEL_RESOURCE_ATTRIBUTES", ""),
            false),
        c.retry(), caFiles);
  }

  public OtlpConfig withProtocol(OtlpProtocol p) {
    return new OtlpConfig(p, endpoint, headers, timeout, gzip, serviceName, resourceAttributes,
        retry, caFiles);
  }

  public OtlpConfig withEndpoint(String e) {
    return new OtlpConfig(protocol, e, headers, timeout, gzip, serviceName, resourceAttributes,
        retry, caFiles);
  }

  /**
   * Adds a header.
   *
   * @throws IllegalArgumentException when the name is not an HTTP token or the value holds
   *     characters other than printable ASCII; the message names neither value nor name text
   *     beyond what is safe (a malformed name may be a pasted credential)
   */
  public OtlpConfig withHeader(String name, String value) {
    checkHeader("OTLP header", name, value);
    Map<String, String> h = new LinkedHashMap<>(headers);
    h.put(name, value);
    return new OtlpConfig(protocol, endpoint, h, timeout, gzip, serviceName, resourceAttributes,
        retry, caFiles);
  }

  public OtlpConfig withTimeout(Duration t) {
    return new OtlpConfig(protocol, endpoint, headers, t, gzip, serviceName, resourceAttributes,
        retry, caFiles);
  }

  public OtlpConfig withRetry(RetryPolicy r) {
    return new OtlpConfig(protocol, endpoint, headers, timeout, gzip, serviceName,
        resourceAttributes, r, caFiles);
  }

  /** Trusts the CAs in {@code pemFile} for every signal (what a command-line flag says). */
  public OtlpConfig withCaFile(Path pemFile) {
    return new OtlpConfig(protocol, endpoint, headers, timeout, gzip, serviceName,
        resourceAttributes, retry, Map.of("", pemFile));
  }

  /** The CA file for {@code signal}: its own, else the one for every signal. */
  public Optional<Path> caFile(String signal) {
    return Optional.ofNullable(caFiles.getOrDefault(signal, caFiles.get("")));
  }

  /** The base URL: the endpoint, or the protocol's default. */
  public URI baseUri() {
    return parseEndpoint(endpoint.isEmpty() ? protocol.defaultEndpoint() : endpoint);
  }

  /** The URL of one signal over http/protobuf, e.g. {@code /v1development/profiles}. */
  public URI signalUri(String path) {
    String base = baseUri().toString();
    while (base.endsWith("/")) {
      base = base.substring(0, base.length() - 1);
    }
    return URI.create(base + path);
  }

  /**
   * Reads every CA file once, so that a missing or malformed one fails before any export.
   *
   * @throws IllegalArgumentException naming the file and the problem
   */
  public void checkCaFiles() {
    caFiles.values().forEach(TrustedCertificates::load);
  }

  /** The trusted CAs of {@code signal}, or null for the JDK's trust store. */
  TrustedCertificates trust(String signal) {
    return caFile(signal).map(TrustedCertificates::load).orElse(null);
  }

  /** TLS is on when the endpoint says https. */
  public boolean tls() {
    return "https".equals(baseUri().getScheme());
  }

  private static URI parseEndpoint(String endpoint) {
    try {
      URI uri = new URI(endpoint);
      if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))
          || uri.getHost() == null) {
        throw new URISyntaxException(endpoint, "not an http or https URL with a host");
      }
      return uri;
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("OTLP endpoint '" + withoutUserInfo(endpoint)
          + "' is not valid: expected http://HOST:PORT or https://HOST:PORT");
    }
  }

  /**
   * {@code k=v,k2=v2} with percent-encoded values, as W3C baggage (the OTEL_* list format). With
   * {@code secret}, an error never shows an item's text, only its position and, when it has
   * one, its name: the values are credentials.
   */
  static Map<String, String> parseList(String variable, String text, boolean secret) {
    Map<String, String> out = new LinkedHashMap<>();
    String[] items = text.split(",");
    for (int i = 0; i < items.length; i++) {
      String item = items[i];
      if (item.isBlank()) {
        continue;
      }
      int eq = item.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException(variable + ": "
            + (secret ? "item " + (i + 1) + " (not shown: it may hold a credential)"
            : "'" + item.trim() + "'") + " is not KEY=VALUE");
      }
      String key = item.substring(0, eq).trim();
      if (secret && !isToken(key)) {
        throw new IllegalArgumentException(variable + ": item " + (i + 1) + " has no valid"
            + " header name before '=' (not shown: it may hold a credential)");
      }
      try {
        out.put(key, URLDecoder.decode(item.substring(eq + 1).trim(), StandardCharsets.UTF_8));
      } catch (IllegalArgumentException e) {
        // URLDecoder's message quotes the value.
        throw new IllegalArgumentException(variable + ": the value of " + key
            + " is not valid percent-encoding" + (secret ? " (not shown)" : ""));
      }
    }
    return out;
  }

  /**
   * Checks a header: its name an HTTP token (RFC 9110), its value printable ASCII (what gRPC
   * metadata allows), so the HTTP and gRPC clients never refuse it with a message that quotes
   * it.
   *
   * @param where what the message starts with, e.g. the variable or flag
   * @throws IllegalArgumentException naming neither the value nor an invalid name
   */
  public static void checkHeader(String where, String name, String value) {
    if (!isToken(name)) {
      throw new IllegalArgumentException(where + ": not a valid header name (letters, digits"
          + " and !#$%&'*+-.^_`|~; not shown: it may hold a credential)");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        throw new IllegalArgumentException(where + ": the value of header " + name
            + " holds a character other than printable ASCII (not shown)");
      }
    }
  }

  private static boolean isToken(String name) {
    if (name.isEmpty()) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      boolean ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
          || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  /**
   * Credentials go to the receiver in clear text: headers on an {@code http://} endpoint. Each
   * header is treated as a credential (authorization, API keys, tenant tokens).
   */
  public boolean credentialsInClear() {
    return !headers.isEmpty() && !tls();
  }

  /** Header values and any user:password in the endpoint are left out: they are credentials. */
  @Override
  public String toString() {
    return "OtlpConfig[protocol=" + protocol + ", endpoint=" + withoutUserInfo(endpoint)
        + ", headers=" + headers.keySet() + " (values hidden), timeout=" + timeout
        + ", gzip=" + gzip + ", serviceName=" + serviceName + ", resourceAttributes="
        + resourceAttributes + ", retry=" + retry + ", caFiles=" + caFiles + "]";
  }

  private static String withoutUserInfo(String endpoint) {
    int scheme = endpoint.indexOf("://");
    int at = endpoint.indexOf('@');
    int slash = endpoint.indexOf('/', scheme < 0 ? 0 : scheme + 3);
    if (scheme < 0 || at < 0 || (slash >= 0 && at > slash)) {
      return endpoint;
    }
    return endpoint.substring(0, scheme + 3) + "***@" + endpoint.substring(at + 1);
  }
}
