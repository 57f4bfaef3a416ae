package dev.polystack.otel.otlp;

import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.metrics.data.Data;
import io.opentelemetry.sdk.metrics.data.HistogramData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.data.MetricDataType;
import io.opentelemetry.sdk.metrics.data.SumData;
import io.opentelemetry.sdk.resources.Resource;
import java.util.Objects;

/**
 * One metric of figures read elsewhere (the kernel's maps) for an SDK metric exporter. The SDK
 * has public factories for points and their data but none for {@link MetricData}; this record
 * keeps the probe metrics off the SDK's internal classes, which may change in any release.
 */
record ProbeMetricData(Resource resource, InstrumentationScopeInfo scope, String name,
    String description, String unit, MetricDataType type, Data<?> data) implements MetricData {
  ProbeMetricData {
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

  static ProbeMetricData longSum(Resource resource, InstrumentationScopeInfo scope, String name,
      String description, String unit, SumData<?> sum) {
    return new ProbeMetricData(resource, scope, name, description, unit, MetricDataType.LONG_SUM,
        sum);
  }

  static ProbeMetricData histogram(Resource resource, InstrumentationScopeInfo scope,
      String name, String description, String unit, HistogramData histogram) {
    return new ProbeMetricData(resource, scope, name, description, unit,
        MetricDataType.HISTOGRAM, histogram);
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
