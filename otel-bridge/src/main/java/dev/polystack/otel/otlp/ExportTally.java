package dev.polystack.otel.otlp;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.common.export.MemoryMode;
import io.opentelemetry.sdk.metrics.Aggregation;
import io.opentelemetry.sdk.metrics.InstrumentType;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.export.MetricExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/** Counts the SDK exporters' failed batches, which the SDK itself only logs. */
final class ExportTally {
  private final AtomicLong batches = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong delivered = new AtomicLong();
  private final AtomicLong failedItems = new AtomicLong();
  private final AtomicReference<String> lastFailure = new AtomicReference<>("");

  /**
   * How a metrics export ended, for its close: empty if every export succeeded and one did
   * within {@code timeout}, else why not.
   */
  String metricsOutcome(java.time.Duration timeout) {
    if (failures() > 0) {
      return failures() + " metrics export(s) failed: " + lastFailure();
    }
    return batches() == 0 ? "no metrics export completed within " + timeout : "";
  }

  long batches() {
    return batches.get();
  }

  long failures() {
    return failures.get();
  }

  /** Items (spans, metric streams) in batches the receiver accepted. */
  long delivered() {
    return delivered.get();
  }

  /** Items in batches that failed. */
  long failedItems() {
    return failedItems.get();
  }

  String lastFailure() {
    return lastFailure.get();
  }

  private CompletableResultCode watch(CompletableResultCode code, int items) {
    code.whenComplete(() -> {
      if (code.isSuccess()) {
        batches.incrementAndGet();
        delivered.addAndGet(items);
      } else {
        failures.incrementAndGet();
        failedItems.addAndGet(items);
        lastFailure.set(describe(code.getFailureThrowable()));
      }
    });
    return code;
  }

  /** The first message along the cause chain (the SDK's export exceptions carry none). */
  static String describe(Throwable t) {
    if (t == null) {
      return "export failed";
    }
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c.getMessage() != null && !c.getMessage().isBlank()) {
        return c == t ? c.getMessage() : t.getClass().getSimpleName() + ": " + c.getMessage();
      }
    }
    return t.toString();
  }

  SpanExporter wrap(SpanExporter delegate) {
    return new SpanExporter() {
      @Override
      public CompletableResultCode export(Collection<SpanData> spans) {
        return watch(delegate.export(spans), spans.size());
      }

      @Override
      public CompletableResultCode flush() {
        return delegate.flush();
      }

      @Override
      public CompletableResultCode shutdown() {
        return delegate.shutdown();
      }
    };
  }

  MetricExporter wrap(MetricExporter delegate) {
    return new MetricExporter() {
      @Override
      public CompletableResultCode export(Collection<MetricData> metrics) {
        return watch(delegate.export(metrics), metrics.size());
      }

      @Override
      public AggregationTemporality getAggregationTemporality(InstrumentType type) {
        return delegate.getAggregationTemporality(type);
      }

      @Override
      public Aggregation getDefaultAggregation(InstrumentType type) {
        return delegate.getDefaultAggregation(type);
      }

      @Override
      public MemoryMode getMemoryMode() {
        return delegate.getMemoryMode();
      }

      @Override
      public CompletableResultCode flush() {
        return delegate.flush();
      }

      @Override
      public CompletableResultCode shutdown() {
        return delegate.shutdown();
      }
    };
  }
}
