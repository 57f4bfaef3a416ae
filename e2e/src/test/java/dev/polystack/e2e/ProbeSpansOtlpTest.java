package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.proto.trace.v1.Span;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real {@code polystack probe --monitor args} run on two {@code %return} sites exporting to a
 * real Collector: every returned call arrives as one span with its entry's first argument and
 * its return value as the program computed them, from its entry to its return.
 */
class ProbeSpansOtlpTest extends WithCollector {
  private static final String COUNTED = "probe_target:probe_counted";
  private static final String SLEEPER = "probe_target:probe_sleeper";

  @TempDir Path tmp;

  @Test
  void everyReturnedCallArrivesAsOneSpanWithItsArgumentAndReturnValue() throws Exception {
    int n = 40;
    long us = 2_000;
    String service = "probe-spans-" + ProcessHandle.current().pid();
    Path out = tmp.resolve("probe.jsonl");
    Distribution.Result r = Distribution.run(null, Map.of("OTEL_SERVICE_NAME", service,
        "OTEL_EXPORTER_OTLP_TIMEOUT", VdsoOtlpTest.SLOW_HOST_TIMEOUT_MS), "probe",
        COUNTED + "%return", SLEEPER + "%return", "--monitor", "args", "--format", "json",
        "-o", out.toString(), "--otlp-endpoint", collector.grpcEndpoint(),
        "--export-interval", "500ms", "--",
        Workloads.binary("probe_target").toString(), "spans", Integer.toString(n),
        Long.toString(us));
    assertEquals(0, r.exitCode(), r.stderr());
    String json = Files.readString(out);
    Matcher pid = Pattern.compile("\"type\":\"site\".*\"pid\":(\\d+)").matcher(json);
    assertTrue(pid.find(), json);
    long target = Long.parseLong(pid.group(1));
    assertTrue(json.contains("\"spans\":" + 2 * n + ",\"spans_dropped\":0"), json);
    assertTrue(json.contains("\"ring_full\":0") && json.contains("\"return_args_lost\":0"),
        json);

    List<Span> spans = new ArrayList<>(collector.awaitSpans(service, 2 * n));
    spans.sort(java.util.Comparator.comparingLong(Span::getStartTimeUnixNano));
    assertEquals(2 * n, spans.size(), spans.toString());
    List<Long> counted = new ArrayList<>();
    Set<String> traces = new HashSet<>();
    Span previous = null;
    for (Span s : spans) {
      assertEquals(Span.SpanKind.SPAN_KIND_INTERNAL, s.getKind());
      assertTrue(s.getParentSpanId().isEmpty(), s.toString());
      assertTrue(s.getEndTimeUnixNano() >= s.getStartTimeUnixNano(), s.toString());
      assertEquals(Long.toString(target), attribute(s, "process.pid"));
      assertTrue(traces.add(s.getTraceId().toStringUtf8()), "a trace shared: " + s);
      // One thread calls them one after the other: no span starts before the previous ended.
      if (previous != null) {
        assertTrue(s.getStartTimeUnixNano() >= previous.getEndTimeUnixNano(),
            previous + "\n" + s);
      }
      previous = s;
      long arg0 = Long.parseLong(attribute(s, "polystack.probe.arg.0"));
      long ret = Long.parseLong(attribute(s, "polystack.probe.return"));
      if (s.getName().equals(COUNTED)) {
        assertEquals(COUNTED + "%return", attribute(s, "probe.site"));
        assertEquals(arg0 + 1, ret, s.toString()); // probe_counted(x) returns x + 1
        counted.add(arg0);
      } else {
        assertEquals(SLEEPER, s.getName());
        assertEquals(us, arg0);
        // nanosleep sleeps at least what it was asked
        assertTrue(s.getEndTimeUnixNano() - s.getStartTimeUnixNano() >= us * 1_000,
            s.toString());
      }
    }
    List<Long> expected = new ArrayList<>();
    for (long i = 0; i < n; i++) {
      expected.add(i);
    }
    assertEquals(expected, counted);

    Map<String, Long> lost = collector.awaitCounters(target,
        c -> c.containsKey("polystack.probe.records.lost/spans_dropped"));
    assertEquals(0L, lost.get("polystack.probe.records.lost/spans_dropped"), lost.toString());
    assertEquals(2L * n, lost.get("polystack.probe.calls/"), lost.toString());
  }

  private static String attribute(Span s, String key) {
    String v = Collector.attribute(s.getAttributesList(), key);
    assertTrue(v != null, key + " missing in " + s);
    return v;
  }
}
