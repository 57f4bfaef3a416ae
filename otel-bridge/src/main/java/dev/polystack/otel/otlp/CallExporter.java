package dev.polystack.otel.otlp;

import dev.polystack.plugin.api.CallRecord;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.api.metrics.LongCounter;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.export.PeriodicMetricReader;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.TimeUnit;

/**
 * vDSO call records as OTLP spans and metrics; the entry point of {@code polystack vdso
 * --otlp-endpoint}. One span per call, named after the function, with the call's own start and
 * end, and its fields as attributes:
 * <ul>
 *   <li>{@code code.function.name}, {@code vdso.symbol.version}, {@code thread.id};
 *   <li>{@code vdso.arg.NAME} per decoded argument, {@code vdso.out.NAME} per captured output;
 *   <li>{@code vdso.return_value} (rax as a signed number), {@code vdso.return_address} and
 *       {@code vdso.entry_rsp} (hex);
 *   <li>a negative result: status ERROR and {@code error.type} = the errno name.
 * </ul>
 * A call of another process than the resource's (a followed fork child) also carries
 * {@code process.pid}.
 *
 * <p>Metrics: {@code polystack.vdso.calls} (by {@code code.function.name} and {@code error.type}),
 * {@code polystack.vdso.call.duration} (seconds, by function), {@code polystack.vdso.records.lost}
 * (by {@code reason}, from {@link #lost}) and {@code polystack.export.spans.dropped} (spans that
 * did not reach the receiver: failed batches while running; after the final flush, every span
 * made and not delivered, queue overflow included).
 *
 * <p>Usage: {@code create(config, resource, CallExporter.monotonicToEpochOffsetNanos())}, then
 * {@link #export} per record from any one thread (or {@link #count} for every call and
 * {@link #span} for those a filter lets through), {@link #lost} per loss counter, and
 * {@link #close} once; {@code close} returns what went wrong, for the summary and exit code.
 */
public final class CallExporter implements AutoCloseable {
  static final AttributeKey<String> FUNCTION = AttributeKey.stringKey("code.function.name");
  static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
  static final AttributeKey<Long> PID = AttributeKey.longKey("process.pid");
  static final int MAX_QUEUED_SPANS = 1 << 16;

  private final long offsetNanos;
  private final SdkTracerProvider tracerProvider;
  private final SdkMeterProvider meterProvider;
  private final Tracer tracer;
  private final LongCounter calls;
  private final DoubleHistogram duration;
  private final LongCounter lost;
  private final ExportTally spanTally = new ExportTally();
  private final ExportTally metricTally = new ExportTally();
  private final Long resourcePid;
  private final AtomicLong exported = new AtomicLong();
  private volatile boolean spansClosed;

  private CallExporter(OtlpConfig config, OtlpResource resource, long offsetNanos,
      Duration interval) {
    this.offsetNanos = offsetNanos;
    this.resourcePid = (Long) resource.attributes().get("process.pid");
    // Spans leave at least as often as metrics, so a streaming session shows its calls live.
    Duration spanDelay = interval.compareTo(Duration.ofSeconds(5)) < 0 ? interval
        : Duration.ofSeconds(5);
    this.tracerProvider = SdkTracerProvider.builder()
        .setResource(resource.toSdk())
        .addSpanProcessor(BatchSpanProcessor.builder(spanTally.wrap(SdkExporters.spans(config)))
            .setMaxQueueSize(MAX_QUEUED_SPANS).setScheduleDelay(spanDelay).build())
        .build();
    this.meterProvider = SdkMeterProvider.builder()
        .setResource(resource.toSdk())
        .registerMetricReader(PeriodicMetricReader.builder(
            metricTally.wrap(SdkExporters.metrics(config))).setInterval(interval).build())
        .build();
    this.tracer = tracerProvider.tracerBuilder(OtlpResource.SCOPE_NAME)
        .setInstrumentationVersion(OtlpResource.version()).build();
    Meter meter = meterProvider.meterBuilder(OtlpResource.SCOPE_NAME)
        .setInstrumentationVersion(OtlpResource.version()).build();
    this.calls = meter.counterBuilder("polystack.vdso.calls").setUnit("{call}")
        .setDescription("Traced vDSO calls").build();
    this.duration = meter.histogramBuilder("polystack.vdso.call.duration").setUnit("s")
        .setDescription("Duration of traced vDSO calls").build();
    this.lost = meter.counterBuilder("polystack.vdso.records.lost").setUnit("{record}")
        .setDescription("Call records lost, by reason (ring overflow, unpaired entry, ...)")
        .build();
    meter.counterBuilder("polystack.export.spans.dropped").setUnit("{span}")
        .setDescription("Spans that did not reach the OTLP receiver")
        .buildWithCallback(m -> m.record(spansDropped()));
  }

  /** Failed batches while spans flow; once the span side is shut down, all not delivered. */
  private long spansDropped() {
    return spansClosed ? Math.max(0, exported.get() - spanTally.delivered())
        : spanTally.failedItems();
  }

  /**
   * An exporter whose spans start at {@code entryNanos + offsetNanos}: the offset turns the
   * records' CLOCK_MONOTONIC times into Unix epoch times.
   */
  public static CallExporter create(OtlpConfig config, OtlpResource resource,
      long monotonicToEpochOffsetNanos) {
    return create(config, resource, monotonicToEpochOffsetNanos, Duration.ofSeconds(10));
  }

  /** As {@link #create(OtlpConfig, OtlpResource, long)}, exporting every {@code interval}. */
  public static CallExporter create(OtlpConfig config, OtlpResource resource,
      long monotonicToEpochOffsetNanos, Duration interval) {
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("export interval must be positive, got " + interval);
    }
    return new CallExporter(config, resource, monotonicToEpochOffsetNanos, interval);
  }

  /**
   * Epoch minus CLOCK_MONOTONIC now, in nanoseconds. HotSpot's System.nanoTime() reads
   * CLOCK_MONOTONIC on Linux, the clock the probe backends stamp records with.
   */
  public static long monotonicToEpochOffsetNanos() {
    long before = System.nanoTime();
    Instant now = Instant.now();
    long after = System.nanoTime();
    long epoch = now.getEpochSecond() * 1_000_000_000L + now.getNano();
    return epoch - (before + (after - before) / 2);
  }

  /** One span and its metrics for {@code call}. */
  public void export(CallRecord call) {
    span(call);
    count(call);
  }

  /** The span of {@code call} only (its metrics come from {@link #count}). */
  public void span(CallRecord call) {
    Span span = tracer.spanBuilder(call.function())
        .setSpanKind(SpanKind.INTERNAL)
        .setParent(Context.root())
        .setStartTimestamp(call.entryNanos() + offsetNanos, TimeUnit.NANOSECONDS)
        .setAllAttributes(attributes(call))
        .startSpan();
    if (call.errorName() != null) {
      span.setStatus(StatusCode.ERROR, call.errorName());
    }
    if (resourcePid == null || resourcePid != call.pid()) {
      span.setAttribute(PID, call.pid());
    }
    span.end(call.exitNanos() + offsetNanos, TimeUnit.NANOSECONDS);
    exported.incrementAndGet();
  }

  /**
   * The call and duration metrics of {@code call}: statistics count every completed call, also
   * those a filter keeps out of the spans.
   */
  public void count(CallRecord call) {
    AttributesBuilder metricAttributes = Attributes.builder().put(FUNCTION, call.function());
    if (call.errorName() != null) {
      metricAttributes.put(ERROR_TYPE, call.errorName());
    }
    calls.add(1, metricAttributes.build());
    duration.record(call.durationNanos() / 1e9, Attributes.of(FUNCTION, call.function()));
  }

  /**
   * Counts {@code count} call records lost for {@code reason} (e.g. lost ring records); zero
   * makes the series exist, so a dashboard sees "none lost" rather than "not reported".
   */
  public void lost(String reason, long count) {
    if (count >= 0) {
      lost.add(count, Attributes.of(SessionMetrics.REASON, reason));
    }
  }

  static Attributes attributes(CallRecord call) {
    AttributesBuilder b = Attributes.builder()
        .put(FUNCTION, call.function())
        .put("thread.id", call.tid())
        .put("vdso.return_value", call.result())
        .put("vdso.return_address", "0x" + Long.toHexString(call.returnAddress()))
        .put("vdso.entry_rsp", "0x" + Long.toHexString(call.entryStackPointer()));
    if (!call.version().isEmpty()) {
      b.put("vdso.symbol.version", call.version());
    }
    if (call.errorName() != null) {
      b.put(ERROR_TYPE, call.errorName());
    }
    put(b, "vdso.arg.", call.arguments());
    if (call.outputs() != null) {
      put(b, "vdso.out.", call.outputs());
    }
    return b.build();
  }

  private static void put(AttributesBuilder b, String prefix, Map<String, Object> values) {
    values.forEach((name, v) -> {
      String key = prefix + name;
      if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
        b.put(key, ((Number) v).longValue());
      } else if (v instanceof Double || v instanceof Float) {
        b.put(key, ((Number) v).doubleValue());
      } else if (v instanceof Boolean bool) {
        b.put(key, bool);
      } else {
        b.put(key, String.valueOf(v));
      }
    });
  }

  /**
   * What the exporter sent and what failed.
   *
   * @param spans spans made
   * @param spansDropped of those, the ones the receiver did not accept (failed or never sent)
   */
  public record Result(long spans, long spansDropped, long spanBatchFailures,
      long metricBatchFailures, String message) {
    public boolean ok() {
      return spansDropped == 0 && spanBatchFailures == 0 && metricBatchFailures == 0
          && message.isEmpty();
    }
  }

  /** Flushes spans and metrics, waiting at most {@code timeout} for each, and shuts down. */
  public Result close(Duration timeout) {
    long ms = timeout.toMillis();
    tracerProvider.forceFlush().join(ms, TimeUnit.MILLISECONDS);
    tracerProvider.shutdown().join(ms, TimeUnit.MILLISECONDS);
    spansClosed = true; // the final metrics carry the exact number of spans lost
    meterProvider.forceFlush().join(ms, TimeUnit.MILLISECONDS);
    meterProvider.shutdown().join(ms, TimeUnit.MILLISECONDS);
    long made = exported.get();
    long dropped = spansDropped();
    String message = "";
    if (spanTally.failures() > 0) {
      message = dropped + " of " + made + " spans dropped, " + spanTally.failures()
          + " span export(s) failed: " + spanTally.lastFailure();
    } else if (metricTally.failures() > 0) {
      message = metricTally.failures() + " metrics export(s) failed: "
          + metricTally.lastFailure();
    } else if (made > 0 && spanTally.batches() == 0) {
      message = "no span export completed within " + timeout;
    } else if (dropped > 0) {
      message = dropped + " of " + made + " spans dropped (export queue full)";
    }
    return new Result(made, dropped, spanTally.failures(), metricTally.failures(), message);
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(10));
  }
}
