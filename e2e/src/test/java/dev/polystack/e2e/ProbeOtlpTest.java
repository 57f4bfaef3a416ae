package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.metrics.v1.HistogramDataPoint;
import io.opentelemetry.proto.metrics.v1.Metric;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real {@code polystack probe --monitor latency} run exporting to a real Collector: the calls
 * counted in the kernel arrive as polystack.probe.calls and as the count of the
 * polystack.probe.duration histogram, whose buckets are the kernel's log2 buckets.
 */
class ProbeOtlpTest extends WithCollector {
  @TempDir Path tmp;

  @Test
  void theKernelsCountsAndBucketsArriveAsMetrics() throws Exception {
    int n = 2_000;
    Path out = tmp.resolve("probe.jsonl");
    Distribution.Result r = Distribution.run(null, Map.of("OTEL_EXPORTER_OTLP_TIMEOUT",
        VdsoOtlpTest.SLOW_HOST_TIMEOUT_MS), "probe", "probe_target:probe_counted",
        "--monitor", "latency", "--format", "json", "-o", out.toString(), "--otlp-endpoint",
        collector.grpcEndpoint(), "--export-interval", "500ms", "--",
        Workloads.binary("probe_target").toString(), "once", Integer.toString(n));
    assertEquals(0, r.exitCode(), r.stderr());
    Matcher pid = Pattern.compile("\"type\":\"site\".*\"pid\":(\\d+)")
        .matcher(Files.readString(out));
    assertTrue(pid.find(), Files.readString(out));
    long target = Long.parseLong(pid.group(1));
    long calls = 4L * n;
    Map<String, Long> points = collector.awaitCounters(target,
        c -> c.getOrDefault("polystack.probe.calls/", 0L) == calls);
    assertEquals(calls, points.get("polystack.probe.calls/"), points.toString());
    assertEquals(0L, points.get("polystack.probe.records.lost/ring_full"), points.toString());
    HistogramDataPoint last = null;
    for (ExportMetricsServiceRequest req : collector.metrics()) {
      for (var rm : req.getResourceMetricsList()) {
        if (Collector.pidOf(rm.getResource().getAttributesList()) != target) {
          continue;
        }
        for (var sm : rm.getScopeMetricsList()) {
          for (Metric m : sm.getMetricsList()) {
            if (m.getName().equals("polystack.probe.duration")) {
              last = m.getHistogram().getDataPoints(0);
            }
          }
        }
      }
    }
    assertTrue(last != null, "no polystack.probe.duration arrived");
    assertEquals(calls, last.getCount());
    assertEquals(calls, last.getBucketCountsList().stream().mapToLong(Long::longValue).sum());
    assertEquals(63, last.getExplicitBoundsCount());
    assertEquals(2e-9, last.getExplicitBounds(0), 1e-18);
    assertEquals("probe_target:probe_counted",
        Collector.attribute(last.getAttributesList(), "probe.site"));
  }
}
