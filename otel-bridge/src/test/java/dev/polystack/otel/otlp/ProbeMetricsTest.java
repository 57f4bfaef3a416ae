package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.MetricDataType;

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
      assertTrue(h.hasMax());
      assertFalse(h.hasMin());
      for (int i = 0; i < 63; i++) {
        assertEquals(Math.scalb(1.0, i + 1) / 1e9, h.getBoundaries().get(i), 0.0, "bound " + i);
      }
      assertEquals(64, h.getCounts().size());
      assertTrue(h.getExemplars().isEmpty());
      assertEquals(1, h.getStartEpochNanos());
      assertEquals(2, h.getEpochNanos());
      assertEquals("libc.so.6:write", h.getAttributes().get(ProbeMetrics.SITE));

      MetricData sum = data.get(0);
      assertEquals(MetricDataType.LONG_SUM, sum.getType());
      assertEquals("{call}", sum.getUnit());
      assertTrue(sum.getLongSumData().isMonotonic());
      assertEquals(AggregationTemporality.CUMULATIVE,
          sum.getLongSumData().getAggregationTemporality());
      assertTrue(calls.getExemplars().isEmpty());
      assertEquals(1, calls.getStartEpochNanos());
      assertEquals(2, calls.getEpochNanos());
      assertEquals(MetricDataType.HISTOGRAM, data.get(1).getType());
      assertEquals("s", data.get(1).getUnit());
      assertEquals(AggregationTemporality.CUMULATIVE,
          data.get(1).getHistogramData().getAggregationTemporality());
      assertEquals("polystack", sum.getInstrumentationScopeInfo().getName());
      assertEquals(1L, sum.getResource().getAttribute(
          io.opentelemetry.api.common.AttributeKey.longKey("process.pid")));
      LongPointData lost = data.get(2).getLongSumData().getPoints().iterator().next();
      assertEquals(0, lost.getValue());
      assertEquals("ring_full", lost.getAttributes().get(SessionMetrics.REASON));
    } finally {
      m.close(java.time.Duration.ofMillis(1));
    }
  }

  @Test
  void aCountRunHasNoHistogramAndAnEmptyHistogramHasNoMax() {
    OtlpConfig config = OtlpConfig.defaults();
    ProbeMetrics m = ProbeMetrics.start(config, OtlpResource.forTarget(
        new dev.polystack.otel.model.TargetInfo(1, "/bin/x", List.of()), config),
        java.time.Duration.ofHours(1), () -> null);
    try {
      List<MetricData> counted = m.metrics(new ProbeMetrics.Snapshot(List.of(
          new ProbeMetrics.Site("x:f", 3, null, 0, 0)), Map.of()), 1, 2);
      assertEquals(List.of("polystack.probe.calls", "polystack.probe.records.lost"),
          counted.stream().map(MetricData::getName).toList());
      List<MetricData> idle = m.metrics(new ProbeMetrics.Snapshot(List.of(
          new ProbeMetrics.Site("x:f", 0, new long[ProbeMetrics.BUCKETS], 0, 0)), Map.of()), 1, 2);
      HistogramPointData h = idle.get(1).getHistogramData().getPoints().iterator().next();
      assertEquals(0, h.getCount());
      assertFalse(h.hasMax());
    } finally {
      m.close(java.time.Duration.ofMillis(1));
    }
  }

  @Test
  void aHistogramPointNeedsOneCountMoreThanItsIncreasingBounds() {
    assertThrows(IllegalArgumentException.class, () -> io.opentelemetry.sdk.metrics.data.HistogramPointData.create(0, 1,
        Attributes.empty(), 0, false, 0, false, 0, List.of(1.0, 2.0), List.of(0L, 0L)));
    assertThrows(IllegalArgumentException.class, () -> io.opentelemetry.sdk.metrics.data.HistogramPointData.create(0, 1,
        Attributes.empty(), 0, false, 0, false, 0, List.of(2.0, 1.0), List.of(0L, 0L, 0L)));
  }
}
