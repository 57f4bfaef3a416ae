package dev.polystack.otel.otlp;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.Data;
import io.opentelemetry.sdk.metrics.data.DoubleExemplarData;
import io.opentelemetry.sdk.metrics.data.HistogramData;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.LongExemplarData;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.data.MetricDataType;
import io.opentelemetry.sdk.metrics.data.SumData;
import io.opentelemetry.sdk.resources.Resource;
import java.util.Collection;
import java.util.List;
import java.util.Objects;

/**
 * Immutable metric data built from figures read elsewhere (the kernel's maps), for an SDK
 * {@link io.opentelemetry.sdk.metrics.export.MetricExporter}: implementations of the SDK's
 * public data interfaces, so that nothing depends on the SDK's internal classes. No exemplars:
 * the points are not recorded through instruments.
 */
final class MetricRecords {
  private MetricRecords() {}

  /** A cumulative or delta integer point. */
  record LongPoint(long startEpochNanos, long epochNanos, Attributes attributes, long value)
      implements LongPointData {
    LongPoint {
      Objects.requireNonNull(attributes, "attributes");
    }

    @Override
    public long getStartEpochNanos() {
      return startEpochNanos;
    }

    @Override
    public long getEpochNanos() {
      return epochNanos;
    }

    @Override
    public Attributes getAttributes() {
      return attributes;
    }

    @Override
    public long getValue() {
      return value;
    }

    @Override
    public List<LongExemplarData> getExemplars() {
      return List.of();
    }
  }

  /**
   * An explicit-bounds histogram point; its count is the sum of {@code counts}.
   *
   * @param counts one per bucket: {@code boundaries.size() + 1}
   */
  record HistogramPoint(long startEpochNanos, long epochNanos, Attributes attributes,
      double sum, boolean hasMin, double min, boolean hasMax, double max,
      List<Double> boundaries, List<Long> counts) implements HistogramPointData {
    HistogramPoint {
      Objects.requireNonNull(attributes, "attributes");
      boundaries = List.copyOf(boundaries);
      counts = List.copyOf(counts);
      if (counts.size() != boundaries.size() + 1) {
        throw new IllegalArgumentException(counts.size() + " bucket counts for "
            + boundaries.size() + " boundaries: expected one more count than boundaries");
      }
      for (int i = 0; i < boundaries.size(); i++) {
        double b = boundaries.get(i);
        if (!Double.isFinite(b) || i > 0 && boundaries.get(i - 1) >= b) {
          throw new IllegalArgumentException("boundaries must be finite and increasing: "
              + boundaries);
        }
      }
    }

    @Override
    public long getStartEpochNanos() {
      return startEpochNanos;
    }

    @Override
    public long getEpochNanos() {
      return epochNanos;
    }

    @Override
    public Attributes getAttributes() {
      return attributes;
    }

    @Override
    public double getSum() {
      return sum;
    }

    @Override
    public long getCount() {
      long n = 0;
      for (long c : counts) {
        n += c;
      }
      return n;
    }

    @Override
    public boolean hasMin() {
      return hasMin;
    }

    @Override
    public double getMin() {
      return min;
    }

    @Override
    public boolean hasMax() {
      return hasMax;
    }

    @Override
    public double getMax() {
      return max;
    }

    @Override
    public List<Double> getBoundaries() {
      return boundaries;
    }

    @Override
    public List<Long> getCounts() {
      return counts;
    }

    @Override
    public List<DoubleExemplarData> getExemplars() {
      return List.of();
    }
  }

  /** The points of an integer sum. */
  record LongSum(boolean monotonic, AggregationTemporality temporality,
      List<LongPointData> points) implements SumData<LongPointData> {
    LongSum {
      Objects.requireNonNull(temporality, "temporality");
      points = List.copyOf(points);
    }

    @Override
    public boolean isMonotonic() {
      return monotonic;
    }

    @Override
    public AggregationTemporality getAggregationTemporality() {
      return temporality;
    }

    @Override
    public Collection<LongPointData> getPoints() {
      return points;
    }
  }

  /** The points of a histogram. */
  record Histogram(AggregationTemporality temporality, List<HistogramPointData> points)
      implements HistogramData {
    Histogram {
      Objects.requireNonNull(temporality, "temporality");
      points = List.copyOf(points);
    }

    @Override
    public AggregationTemporality getAggregationTemporality() {
      return temporality;
    }

    @Override
    public Collection<HistogramPointData> getPoints() {
      return points;
    }
  }

  /** One metric: a name and its points on a resource, of the type {@code data} is. */
  record Metric(Resource resource, InstrumentationScopeInfo scope, String name,
      String description, String unit, MetricDataType type, Data<?> data) implements MetricData {
    Metric {
      Objects.requireNonNull(resource, "resource");
      Objects.requireNonNull(scope, "scope");
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(description, "description");
      Objects.requireNonNull(unit, "unit");
      boolean fits = switch (type) {
        case LONG_SUM, DOUBLE_SUM -> data instanceof SumData;
        case HISTOGRAM -> data instanceof HistogramData;
        default -> false;
      };
      if (!fits) {
        throw new IllegalArgumentException(type + " metric " + name + " with data "
            + (data == null ? null : data.getClass().getSimpleName()));
      }
    }

    static Metric longSum(Resource resource, InstrumentationScopeInfo scope, String name,
        String description, String unit, LongSum sum) {
      return new Metric(resource, scope, name, description, unit, MetricDataType.LONG_SUM, sum);
    }

    static Metric histogram(Resource resource, InstrumentationScopeInfo scope, String name,
        String description, String unit, Histogram histogram) {
      return new Metric(resource, scope, name, description, unit, MetricDataType.HISTOGRAM,
          histogram);
    }

    @Override
    public Resource getResource() {
      return resource;
    }

    @Override
    public InstrumentationScopeInfo getInstrumentationScopeInfo() {
      return scope;
    }

    @Override
    public String getName() {
      return name;
    }

    @Override
    public String getDescription() {
      return description;
    }

    @Override
    public String getUnit() {
      return unit;
    }

    @Override
    public MetricDataType getType() {
      return type;
    }

    @Override
    public Data<?> getData() {
      return data;
    }
  }
}
