package dev.polystack.e2e;

import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A real OpenTelemetry Collector (e2e/collector, built with {@code go build} and cached under
 * e2e/target/collector/HASH-OF-GO.SUM) on loopback ports, with traces, metrics and profiles
 * pipelines into the debug exporter and the file exporter ({@code format: proto}: a 4-byte
 * big-endian length before each binary OTLP message), which the tests read back.
 */
final class Collector implements AutoCloseable {
  private static final String CONFIG = """
      receivers:
        otlp:
          protocols:
            grpc:
              endpoint: 127.0.0.1:%d
            http:
              endpoint: 127.0.0.1:%d
      exporters:
        debug:
          verbosity: basic
        file/profiles:
          path: %s/profiles.pb
          format: proto
          flush_interval: 100ms
        file/traces:
          path: %s/traces.pb
          format: proto
          flush_interval: 100ms
        file/metrics:
          path: %s/metrics.pb
          format: proto
          flush_interval: 100ms
      service:
        telemetry:
          metrics:
            level: none
        pipelines:
          traces:
            receivers: [otlp]
            exporters: [debug, file/traces]
          metrics:
            receivers: [otlp]
            exporters: [debug, file/metrics]
          profiles:
            receivers: [otlp]
            exporters: [debug, file/profiles]
      """;

  private final Path dir;
  private final Process process;
  final int grpcPort;
  final int httpPort;
  private final boolean tls;

  private Collector(Path dir, Process process, int grpcPort, int httpPort, boolean tls) {
    this.tls = tls;
    this.dir = dir;
    this.process = process;
    this.grpcPort = grpcPort;
    this.httpPort = httpPort;
  }

  static Collector start() throws IOException, InterruptedException {
    return start(null, null);
  }

  /**
   * A Collector whose receivers speak TLS with this PEM certificate and key (endpoints
   * {@code https://127.0.0.1:PORT}); both null for plain text.
   */
  static Collector start(Path certFile, Path keyFile) throws IOException, InterruptedException {
    Path binary = binary();
    Path dir = Files.createTempDirectory("polystack-otelcol");
    int grpc = freePort();
    int http = freePort();
    String d = dir.toString();
    String config = CONFIG.formatted(grpc, http, d, d, d);
    if (certFile != null) {
      String tls = "\n        tls:\n          cert_file: " + certFile
          + "\n          key_file: " + keyFile;
      // The whole line: one port may be a prefix of the other.
      config = config.replace("127.0.0.1:" + grpc + "\n", "127.0.0.1:" + grpc + tls + "\n")
          .replace("127.0.0.1:" + http + "\n", "127.0.0.1:" + http + tls + "\n");
    }
    Files.writeString(dir.resolve("config.yaml"), config);
    Process p = new ProcessBuilder(binary.toString(), "--config", dir.resolve("config.yaml")
        .toString(), "--feature-gates=service.profilesSupport")
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve("collector.log").toFile())
        .start();
    Collector c = new Collector(dir, p, grpc, http, certFile != null);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!c.log().contains("Everything is ready")) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        c.close();
        throw new IllegalStateException("the Collector did not start: " + c.log());
      }
      Thread.sleep(100);
    }
    return c;
  }

  String grpcEndpoint() {
    return (tls ? "https" : "http") + "://127.0.0.1:" + grpcPort;
  }

  String httpEndpoint() {
    return (tls ? "https" : "http") + "://127.0.0.1:" + httpPort;
  }

  String log() {
    try {
      return Files.readString(dir.resolve("collector.log"), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }

  List<ExportProfilesServiceRequest> profiles() throws IOException {
    List<ExportProfilesServiceRequest> out = new ArrayList<>();
    for (byte[] m : messages("profiles.pb")) {
      out.add(ExportProfilesServiceRequest.parseFrom(m));
    }
    return out;
  }

  List<ExportTraceServiceRequest> traces() throws IOException {
    List<ExportTraceServiceRequest> out = new ArrayList<>();
    for (byte[] m : messages("traces.pb")) {
      out.add(ExportTraceServiceRequest.parseFrom(m));
    }
    return out;
  }

  List<ExportMetricsServiceRequest> metrics() throws IOException {
    List<ExportMetricsServiceRequest> out = new ArrayList<>();
    for (byte[] m : messages("metrics.pb")) {
      out.add(ExportMetricsServiceRequest.parseFrom(m));
    }
    return out;
  }

  /** Waits until {@code read} gives something {@code done} accepts (the exporter flushes). */
  <T> T await(IoSupplier<T> read, Predicate<T> done) throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    T value = read.get();
    while (!done.test(value) && System.nanoTime() < deadline) {
      Thread.sleep(100);
      value = read.get();
    }
    return value;
  }

  /**
   * The spans of {@code service} once at least {@code count} have arrived (or the wait ended),
   * by start time within each request.
   */
  List<Span> awaitSpans(String service, int count) throws IOException, InterruptedException {
    return await(this::traces, t -> spansOf(t, service).size() >= count)
        .stream().flatMap(t -> spansOf(List.of(t), service).stream()).toList();
  }

  /**
   * The {@link #counters} of process {@code pid} once {@code done} accepts them (or the wait
   * ended).
   */
  Map<String, Long> awaitCounters(long pid, Predicate<Map<String, Long>> done)
      throws IOException, InterruptedException {
    return counters(await(this::metrics, m -> done.test(counters(m, pid))), pid);
  }

  interface IoSupplier<T> {
    T get() throws IOException;
  }

  /** The length-prefixed messages written so far; a message still being written is left out. */
  private List<byte[]> messages(String file) throws IOException {
    Path path = dir.resolve(file);
    List<byte[]> out = new ArrayList<>();
    if (!Files.exists(path)) {
      return out;
    }
    ByteBuffer buf = ByteBuffer.wrap(Files.readAllBytes(path));
    while (buf.remaining() >= 4) {
      int length = buf.getInt();
      if (length < 0 || length > buf.remaining()) {
        break;
      }
      byte[] m = new byte[length];
      buf.get(m);
      out.add(m);
    }
    return out;
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** The Collector binary for the current go.sum, built once and then reused. */
  static synchronized Path binary() throws IOException, InterruptedException {
    Path source = Distribution.root().resolve("e2e/collector");
    String hash;
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(
          (Files.readString(source.resolve("go.sum")) + Files.readString(source.resolve("go.mod"))
              + Files.readString(source.resolve("main.go"))).getBytes(StandardCharsets.UTF_8));
      hash = HexFormat.of().formatHex(digest, 0, 8);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    Path binary = Distribution.root().resolve("e2e/target/collector/" + hash
        + "/polystack-otelcol");
    if (Files.isExecutable(binary)) {
      return binary;
    }
    Files.createDirectories(binary.getParent());
    Path log = binary.getParent().resolve("build.log");
    Process p = new ProcessBuilder(go(), "build", "-o", binary.toString(), ".")
        .directory(source.toFile())
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .start();
    if (!p.waitFor(15, TimeUnit.MINUTES) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IllegalStateException("go build of e2e/collector failed: "
          + Files.readString(log));
    }
    return binary;
  }

  private static String go() {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      if (Files.isExecutable(Path.of(dir, "go"))) {
        return Path.of(dir, "go").toString();
      }
    }
    if (Files.isExecutable(Path.of("/usr/local/go/bin/go"))) {
      return "/usr/local/go/bin/go";
    }
    throw new IllegalStateException("Go is needed to build the test Collector: install golang-go"
        + " (./run-tests does)");
  }

  // Reading the requests the Collector wrote back (shared by the OTLP tests).

  private static long pidOf(List<KeyValue> resource) {
    String pid = attribute(resource, "process.pid");
    return pid == null ? -1 : Long.parseLong(pid);
  }

  static long sampleCount(List<ExportProfilesServiceRequest> requests) {
    return requests.stream().flatMap(r -> r.getResourceProfilesList().stream())
        .flatMap(rp -> rp.getScopeProfilesList().stream())
        .flatMap(sp -> sp.getProfilesList().stream())
        .flatMap(p -> p.getSamplesList().stream())
        .mapToLong(s -> s.getTimestampsUnixNanoCount()).sum();
  }

  static String attribute(List<KeyValue> attributes, String key) {
    return attributes.stream().filter(kv -> kv.getKey().equals(key)).findFirst()
        .map(kv -> kv.getValue().hasIntValue() ? Long.toString(kv.getValue().getIntValue())
            : kv.getValue().getStringValue()).orElse(null);
  }

  static List<Span> spansOf(List<ExportTraceServiceRequest> requests, String service) {
    return requests.stream().flatMap(t -> t.getResourceSpansList().stream())
        .filter(rs -> service.equals(attribute(rs.getResource().getAttributesList(),
            "service.name")))
        .flatMap(rs -> rs.getScopeSpansList().stream())
        .flatMap(ss -> ss.getSpansList().stream())
        .sorted((a, b) -> Long.compare(a.getStartTimeUnixNano(), b.getStartTimeUnixNano()))
        .toList();
  }

  /**
   * The latest value of every counter of one process, by "name/reason" (the {@code reason} or
   * {@code error.type} attribute, else empty); points with equal keys are summed.
   */
  static Map<String, Long> counters(List<ExportMetricsServiceRequest> requests,
      long pid) {
    Map<String, Long> out = new HashMap<>();
    for (ExportMetricsServiceRequest req : requests) {
      req.getResourceMetricsList().stream()
          .filter(rm -> pidOf(rm.getResource().getAttributesList()) == pid)
          .flatMap(rm -> rm.getScopeMetricsList().stream())
          .flatMap(sm -> sm.getMetricsList().stream())
          .filter(Metric::hasSum)
          .forEach(m -> {
            Map<String, Long> current = new HashMap<>();
            for (NumberDataPoint p : m.getSum().getDataPointsList()) {
              String reason = attribute(p.getAttributesList(), "reason");
              String error = attribute(p.getAttributesList(), "error.type");
              String name = attribute(p.getAttributesList(), "name");
              String key = m.getName() + "/" + (reason != null ? reason
                  : error != null ? error : name != null ? name : "");
              current.merge(key, p.getAsInt(), Long::sum);
            }
            out.putAll(current); // cumulative: a later export replaces an earlier one
          });
    }
    return out;
  }
}
