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
 * e2e/target/collector/HASH-OF-ITS-SOURCES, see {@link #binary}) on loopback ports, with
 * traces, metrics and profiles pipelines into the debug exporter and the file exporter
 * ({@code format: proto}: a 4-byte big-endian length before each binary OTLP message), which the
 * tests read back.
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
    return start(certFile, keyFile, freePort());
  }

  /** A plain-text Collector on a gRPC port chosen beforehand (one that polystack already uses). */
  static Collector onGrpcPort(int grpc) throws IOException, InterruptedException {
    return start(null, null, grpc);
  }

  /** A loopback port free now, for a Collector started later. */
  static int unusedPort() throws IOException {
    return freePort();
  }

  private static Collector start(Path certFile, Path keyFile, int grpc)
      throws IOException, InterruptedException {
    Path binary = binary();
    Path dir = Files.createTempDirectory("polystack-otelcol");
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
    return launch(binary, dir, config, grpc, http, certFile != null, 30);
  }

  /**
   * A Collector running {@code config} from {@code dir}, where its file exporters write
   * profiles.pb and metrics.pb for {@link #profiles} and {@link #metrics}; it has no OTLP ports
   * of its own unless the config opens them. Its start may wait for a receiver's child (the
   * polystack receiver waits for its agent's JVM), so it gets two minutes.
   */
  static Collector startWithConfig(Path dir, String config)
      throws IOException, InterruptedException {
    return launch(binary(), dir, config, -1, -1, false, 120);
  }

  /** How a Collector run that was expected to end by itself ended. */
  record Exit(int code, String output) {}

  /**
   * Runs a Collector on {@code config} from {@code dir} until it exits by itself (a config it
   * refuses, a fatal error), for up to two minutes.
   */
  static Exit run(Path dir, String config) throws IOException, InterruptedException {
    Collector c = launch(binary(), dir, config, -1, -1, false, 0);
    if (!c.process.waitFor(2, TimeUnit.MINUTES)) {
      c.close();
      throw new AssertionError("the Collector did not exit by itself: " + c.log());
    }
    return new Exit(c.process.exitValue(), c.log());
  }

  /** Starts the Collector; waits up to {@code readySeconds} until it is ready, unless 0. */
  private static Collector launch(Path binary, Path dir, String config, int grpc, int http,
      boolean tls, int readySeconds) throws IOException, InterruptedException {
    Files.writeString(dir.resolve("config.yaml"), config);
    Process p = new ProcessBuilder(binary.toString(), "--config", dir.resolve("config.yaml")
        .toString(), "--feature-gates=service.profilesSupport")
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve("collector.log").toFile())
        .start();
    Collector c = new Collector(dir, p, grpc, http, tls);
    if (readySeconds == 0) {
      return c;
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(readySeconds);
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

  long pid() {
    return process.pid();
  }

  /**
   * Sends SIGTERM and waits for the Collector to exit: its exit code, or -1 when it had to be
   * killed after a minute.
   */
  int stop() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
      return -1;
    }
    return process.exitValue();
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

  /**
   * The Collector binary for the current sources, built once and then reused. The hash covers
   * e2e/collector's go.sum, go.mod and main.go, then the polystack receiver's go.mod, go.sum and
   * non-test .go files (otel-bridge/receiver, built in through a replace directive) in byte
   * order of their paths: the same bytes ./run-tests hashes, so both find the same binary.
   */
  static synchronized Path binary() throws IOException, InterruptedException {
    Path root = Distribution.root();
    Path source = root.resolve("e2e/collector");
    List<Path> files = new ArrayList<>(List.of(source.resolve("go.sum"), source.resolve("go.mod"),
        source.resolve("main.go")));
    Path receiver = root.resolve("otel-bridge/receiver");
    try (java.util.stream.Stream<Path> walk = Files.walk(receiver)) {
      walk.filter(Files::isRegularFile)
          .filter(f -> {
            String name = f.getFileName().toString();
            return name.equals("go.mod") || name.equals("go.sum")
                || name.endsWith(".go") && !name.endsWith("_test.go");
          })
          .map(root::relativize)
          .sorted(java.util.Comparator.comparing(Collector::pathBytes,
              java.util.Arrays::compareUnsigned))
          .forEach(f -> files.add(root.resolve(f)));
    }
    String hash;
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      for (Path f : files) {
        sha.update(Files.readAllBytes(f));
      }
      hash = HexFormat.of().formatHex(sha.digest(), 0, 8);
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

  /** A relative path's bytes, which {@code LC_ALL=C sort} orders unsigned. */
  private static byte[] pathBytes(Path relative) {
    return relative.toString().getBytes(StandardCharsets.UTF_8);
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

  static long pidOf(List<KeyValue> resource) {
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

  /**
   * A resource attribute of a profiles request: polystack sends inline keys; the Collector's file
   * exporter writes them back as key_strindex / string_value_strindex into the dictionary, so
   * both are read.
   */
  static String attribute(io.opentelemetry.proto.profiles.v1development.ProfilesDictionary d,
      List<KeyValue> attributes, String key) {
    for (KeyValue kv : attributes) {
      String k = kv.getKey().isEmpty() ? d.getStringTable(kv.getKeyStrindex()) : kv.getKey();
      if (k.equals(key)) {
        var v = kv.getValue();
        return v.hasIntValue() ? Long.toString(v.getIntValue())
            : v.hasStringValueStrindex() ? d.getStringTable(v.getStringValueStrindex())
            : v.getStringValue();
      }
    }
    return null;
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
