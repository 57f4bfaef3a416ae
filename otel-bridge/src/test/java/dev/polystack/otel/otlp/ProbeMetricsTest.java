package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProbeMetricsTest {
  @Test
  void kernelBucketsBecomeExplicitBoundsOfPowersOfTwoNanoseconds() {
    long[] buckets = new long[ProbeMetrics.BUCKETS];
    buckets[0] = 1; // [0, 2) ns
    buckets[21] = 5; // [2^21, 2^22) ns
    OtlpConfig config = OtlpConfig.defaults();
    ProbeMetrics m = ProbeMetrics.start(config, OtlpResource.forTarget(new dev.polystack.otel.model.TargetInfo(1, "/bin/x", List.of()), config),
        java.time.Duration.ofHours(1), () -> null);
    try {
      List<MetricData> data = m.metrics(new ProbeMetrics.Snapshot(List.of(
          new ProbeMetrics.Site("libc.so.6:write", 6, buckets, 12_000_000, 3_000_000)),
          Map.of("ring_full", 0L)), 1, 2);
      assertEquals(List.of("polystack.probe.calls", "polystack.probe.duration",
          "polystack.probe.records.lost"), data.stream().map(MetricData::getName).toList());
      LongPointData calls = data.get(0).getLongSumData().getPoints().iterator().next();
      assertEquals(6, calls.getValue());
      HistogramPointData h = data.get(1).getHistogramData().getPoints().iterator().next();
      assertEquals(6, h.getCount());
      assertEquals(63, h.getBoundaries().size());
      assertEquals(2e-9, h.getBoundaries().get(0), 1e-18);
      assertEquals(Math.scalb(1.0, 22) / 1e9, h.getBoundaries().get(21), 1e-18);
      assertEquals(1, h.getCounts().get(0));
      assertEquals(5, h.getCounts().get(21));
      assertEquals(0.012, h.getSum(), 1e-12);
      assertEquals(0.003, h.getMax(), 1e-12);
    } finally {
      m.close(java.time.Duration.ofMillis(1));
    }
  }
}
