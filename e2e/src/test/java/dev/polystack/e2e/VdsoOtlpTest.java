package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.TraceCounters;
import dev.polystack.otel.otlp.OtlpProtocol;
import io.opentelemetry.proto.trace.v1.Span;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A real {@code polystack vdso} session streaming to a real Collector: the workload's calls, of
 * which it prints its own account, come back from the Collector as one span each, with the
 * call and loss metrics. The ptrace backend is exact, so the counts are equalities.
 */
class VdsoOtlpTest extends WithCollector {
  /** 2 threads x (20 OK + 5 failing) clock_gettime calls. */
  static final List<String> WORKLOAD_ARGS = List.of("threads", "2", "20");
  static final int OK_CALLS = 40;
  static final int FAILED_CALLS = 10;
  /**
   * Per-request timeout: a TLS handshake on a shared 2-core host under a load of 40 took more
   * than the default 10 s; the tests are about what arrives, not how fast.
   */
  static final String SLOW_HOST_TIMEOUT_MS = "30000";

  @TempDir Path tmp;

  @ParameterizedTest
  @EnumSource(OtlpProtocol.class)
  void everyCallOfARealSessionBecomesOneSpanWithTheLossMetrics(OtlpProtocol protocol)
      throws Exception {
    String service = "vdso-session-" + protocol.ordinal() + "-" + System.nanoTime();
    String endpoint = protocol == OtlpProtocol.GRPC ? collector.grpcEndpoint()
        : collector.httpEndpoint();
    Path out = tmp.resolve("calls.json");
    Distribution.Result r = Distribution.run(null, Map.of("OTEL_SERVICE_NAME", service,
        "OTEL_EXPORTER_OTLP_TIMEOUT", SLOW_HOST_TIMEOUT_MS),
        vdso(out, "--otlp-endpoint", endpoint, "--otlp-protocol", protocol.id(),
            "--export-interval", "500ms"));
    assertEquals(0, r.exitCode(), r.stderr());
    assertTrue(r.stderr().contains("OTLP: sent " + (OK_CALLS + FAILED_CALLS) + " span(s)"),
        r.stderr());
    assertSpansMatchTheWorkload(collector, service, r.stdout(), OK_CALLS, FAILED_CALLS);

    int pid = VdsoCalls.parse(r.stdout()).get(0).pid();
    Map<String, Long> points = collector.awaitCounters(pid, c -> allCalls(c)
        && c.containsKey("polystack.export.spans.dropped/"));
    assertEquals(OK_CALLS, points.get("polystack.vdso.calls/"), points.toString());
    assertEquals(FAILED_CALLS, points.get("polystack.vdso.calls/EINVAL"), points.toString());
    // The loss series exist even when nothing was lost: "none" is not "not reported".
    assertEquals(0L, points.get("polystack.vdso.records.lost/ring_lost"), points.toString());
    assertEquals(0L, points.get("polystack.export.spans.dropped/"), points.toString());
    // Only declared losses (calls not recorded) are lost records: never a note such as exec.
    String lost = "polystack.vdso.records.lost/";
    points.keySet().stream().filter(k -> k.startsWith(lost)).forEach(k -> assertEquals(
        CounterKind.LOSS, TraceCounters.registry().classify(k.substring(lost.length())).kind(),
        k));
  }

  @Test
  void filtersThinTheSpansButTheCallMetricsCountEveryCall() throws Exception {
    String service = "vdso-filtered-" + System.nanoTime();
    Path out = tmp.resolve("errors.json");
    Distribution.Result r = Distribution.run(null, Map.of("OTEL_SERVICE_NAME", service,
        "OTEL_EXPORTER_OTLP_TIMEOUT", SLOW_HOST_TIMEOUT_MS),
        vdso(out, "--errors-only", "--otlp-endpoint", collector.grpcEndpoint(),
            "--export-interval", "500ms"));
    assertEquals(0, r.exitCode(), r.stderr());
    List<Span> spans = collector.awaitSpans(service, FAILED_CALLS);
    assertEquals(FAILED_CALLS, spans.size());
    assertTrue(spans.stream().allMatch(s -> "EINVAL".equals(
        Collector.attribute(s.getAttributesList(), "error.type"))));
    int pid = VdsoCalls.parse(r.stdout()).get(0).pid();
    Map<String, Long> points = collector.awaitCounters(pid, VdsoOtlpTest::allCalls);
    assertEquals(OK_CALLS, points.get("polystack.vdso.calls/"), points.toString());
    assertEquals(FAILED_CALLS, points.get("polystack.vdso.calls/EINVAL"), points.toString());
  }

  @Test
  void aReceiverThatIsDownFailsTheRunButTheLocalOutputIsWritten() throws Exception {
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    Path out = tmp.resolve("calls.json");
    Distribution.Result r = Distribution.run(vdso(out, "--otlp-endpoint",
        "http://127.0.0.1:" + closed, "--otlp-protocol", "http/protobuf"));
    assertEquals(1, r.exitCode(), r.stderr());
    String last = r.stderrLines().get(r.stderrLines().size() - 1);
    assertTrue(last.startsWith("polystack: OTLP export to http://127.0.0.1:" + closed), last);
    assertTrue(last.contains("spans dropped"), last);
    assertEquals(OK_CALLS + FAILED_CALLS, Files.readAllLines(out).stream()
        .filter(l -> l.startsWith("{\"type\":\"call\"")).count(), "local output kept");
    assertTrue(Files.readString(out).contains("\"target_exit\":\"exited(0)\""),
        "the target ran to its end unharmed");
  }

  /**
   * Every call of the workload counted. Both outcomes are waited for: an export made while the
   * workload ran can already hold all OK calls but not yet all failed ones.
   */
  private static boolean allCalls(Map<String, Long> counters) {
    return counters.getOrDefault("polystack.vdso.calls/", 0L) == OK_CALLS
        && counters.getOrDefault("polystack.vdso.calls/EINVAL", 0L) == FAILED_CALLS;
  }

  /** {@code vdso} on the ptrace backend over the workload, JSON lines into {@code out}. */
  static String[] vdso(Path out, String... more) {
    List<String> args = new java.util.ArrayList<>(List.of("vdso", "--backend", "ptrace",
        "--functions", "clock_gettime", "--json", "-o", out.toString()));
    args.addAll(List.of(more));
    args.add("--");
    args.add(Workloads.binary("vdso_calls").toString());
    args.addAll(WORKLOAD_ARGS);
    return args.toArray(String[]::new);
  }

  /**
   * One span per call the workload says it made: per thread (tid), per outcome, with the
   * function's name, a positive duration and the resource's pid.
   */
  static void assertSpansMatchTheWorkload(Collector c, String service, String stdout, int ok,
      int failed) throws Exception {
    List<VdsoCalls.Line> made = VdsoCalls.parse(stdout);
    List<Span> spans = c.awaitSpans(service, ok + failed);
    assertEquals(ok + failed, spans.size(), c.log());
    Map<Long, Long> perTid = spans.stream().collect(Collectors.groupingBy(
        s -> Long.parseLong(Collector.attribute(s.getAttributesList(), "thread.id")),
        Collectors.counting()));
    Map<Long, Long> expected = new HashMap<>();
    made.forEach(m -> expected.put((long) m.tid(), (long) m.ok() + m.failed()));
    assertEquals(expected, perTid, "right threads");
    assertEquals(failed, spans.stream().filter(s -> "EINVAL".equals(
        Collector.attribute(s.getAttributesList(), "error.type"))).count());
    for (Span s : spans) {
      assertEquals("clock_gettime", s.getName());
      assertTrue(s.getEndTimeUnixNano() > s.getStartTimeUnixNano(), s.toString());
    }
  }
}
