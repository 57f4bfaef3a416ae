package dev.polystack.otel.otlp;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.IdGenerator;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The calls a {@code polystack probe --monitor args} run saw at {@code %return} sites, as OTLP
 * spans: one root span per call (its own random trace id), kind INTERNAL, from the call's entry
 * to its return, with
 * <ul>
 *   <li>{@code probe.site} (the site as in the metrics), {@code thread.id}, {@code process.pid};
 *   <li>{@code polystack.probe.arg.0} .. {@code .5}: rdi, rsi, rdx, rcx, r8, r9 at the entry (left
 *       out when the kernel did not keep them), {@code polystack.probe.return}: rax;
 *   <li>where a plug-in decoded the call: {@code polystack.probe.arg.<name>} per argument,
 *       {@code polystack.probe.return.decoded}, {@code polystack.probe.failed} and, when the
 *       return names it, {@code polystack.probe.error} (all strings but the boolean).
 * </ul>
 * Spans wait in a bounded queue of {@value #MAX_QUEUED} and leave in batches of up to
 * {@value #MAX_BATCH} from one thread, each batch awaited before the next: memory stays bounded
 * whatever the hit rate. A span the queue cannot take and every span of a batch that failed (or
 * got no answer in time) is counted as dropped.
 */
public final class ProbeSpans {
  static final AttributeKey<String> SITE = ProbeMetrics.SITE;
  static final AttributeKey<Long> THREAD = AttributeKey.longKey("thread.id");
  static final AttributeKey<Long> PID = AttributeKey.longKey("process.pid");
  static final AttributeKey<Long> RETURN = AttributeKey.longKey("polystack.probe.return");
  static final List<AttributeKey<Long>> ARGS = List.of(
      AttributeKey.longKey("polystack.probe.arg.0"), AttributeKey.longKey("polystack.probe.arg.1"),
      AttributeKey.longKey("polystack.probe.arg.2"), AttributeKey.longKey("polystack.probe.arg.3"),
      AttributeKey.longKey("polystack.probe.arg.4"), AttributeKey.longKey("polystack.probe.arg.5"));
  static final String ARG_PREFIX = "polystack.probe.arg.";
  static final AttributeKey<String> RETURN_DECODED =
      AttributeKey.stringKey("polystack.probe.return.decoded");
  static final AttributeKey<Boolean> FAILED = AttributeKey.booleanKey("polystack.probe.failed");
  static final AttributeKey<String> ERROR = AttributeKey.stringKey("polystack.probe.error");
  static final int MAX_QUEUED = 1 << 16;
  static final int MAX_BATCH = 512;
  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  /**
   * One call that returned.
   *
   * @param name the span's name: the probed function as the user named it
   * @param site the site as the metrics name it ({@code probe.site})
   * @param args rdi..r9 at the entry, or null when they were not kept
   * @param endMonotonicNanos CLOCK_MONOTONIC at the return
   * @param decoded what a plug-in decoded of the call, or null
   */
  public record Call(String name, String site, int pid, int tid, long[] args, long returnValue,
      long endMonotonicNanos, long durationNanos, Decoded decoded) {
    /** A call nothing decoded. */
    public Call(String name, String site, int pid, int tid, long[] args, long returnValue,
        long endMonotonicNanos, long durationNanos) {
      this(name, site, pid, tid, args, returnValue, endMonotonicNanos, durationNanos, null);
    }

    public Call {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(site, "site");
      if (args != null && args.length != ARGS.size()) {
        throw new IllegalArgumentException(args.length + " args, not " + ARGS.size());
      }
      if (durationNanos < 0) {
        throw new IllegalArgumentException("duration < 0: " + durationNanos);
      }
      args = args == null ? null : args.clone();
    }
  }

  /**
   * A call as a plug-in's decoder wrote it.
   *
   * @param arguments values by argument name (identifiers), in declaration order; empty when
   *     the entry's registers were not kept
   * @param returnValue the return value as text
   * @param failed whether it reports a failure
   * @param errorName the error it names, or null
   */
  public record Decoded(Map<String, String> arguments, String returnValue, boolean failed,
      String errorName) {
    public Decoded {
      arguments = Collections.unmodifiableMap(new LinkedHashMap<>(arguments));
      Objects.requireNonNull(returnValue, "returnValue");
    }
  }

  /**
   * What became of the spans.
   *
   * @param spans spans made
   * @param dropped of those, spans that did not reach the receiver: queue full, failed or
   *     unanswered batches, still queued at the end
   * @param failure empty, or why the last export failed
   */
  public record Result(long spans, long dropped, String failure) {}

  private final SpanExporter exporter;
  private final Resource resource;
  private final InstrumentationScopeInfo scope;
  private final long offsetNanos;
  private final long delayNanos;
  private final long exportWaitMillis;
  private final IdGenerator ids = IdGenerator.random();
  private final BlockingQueue<SpanData> queue = new ArrayBlockingQueue<>(MAX_QUEUED);
  private final AtomicLong made = new AtomicLong();
  private final AtomicLong queueFull = new AtomicLong();
  private final AtomicLong delivered = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicReference<String> lastFailure = new AtomicReference<>("");
  private final Thread sender;
  private volatile boolean closing;
  private Result result;

  private ProbeSpans(SpanExporter exporter, OtlpResource resource,
      long monotonicToEpochOffsetNanos, Duration interval, Duration exportWait) {
    this.exporter = exporter;
    this.resource = resource.toSdk();
    this.scope = InstrumentationScopeInfo.builder(OtlpResource.SCOPE_NAME)
        .setVersion(OtlpResource.version()).build();
    this.offsetNanos = monotonicToEpochOffsetNanos;
    // Spans leave at least every 5 s, so a long run shows its calls while it runs.
    this.delayNanos = Math.min(interval.toNanos(), TimeUnit.SECONDS.toNanos(5));
    this.exportWaitMillis = exportWait.toMillis();
    this.sender = new Thread(this::send, "polystack-probe-spans");
    sender.setDaemon(true);
    sender.start();
  }

  /**
   * Starts a sender to {@code config}'s receiver; {@code monotonicToEpochOffsetNanos} (see
   * {@link CallExporter#monotonicToEpochOffsetNanos}) turns the calls' CLOCK_MONOTONIC times into
   * Unix epoch times.
   */
  public static ProbeSpans start(OtlpConfig config, OtlpResource resource,
      long monotonicToEpochOffsetNanos, Duration interval) {
    return start(SdkExporters.spans(config), resource, monotonicToEpochOffsetNanos, interval,
        config.timeout().plusSeconds(10));
  }

  static ProbeSpans start(SpanExporter exporter, OtlpResource resource,
      long monotonicToEpochOffsetNanos, Duration interval, Duration exportWait) {
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("export interval must be positive, got " + interval);
    }
    return new ProbeSpans(exporter, resource, monotonicToEpochOffsetNanos, interval,
        exportWait);
  }

  /** Queues the span of {@code call}, or counts it as dropped when the queue is full. */
  public void add(Call call) {
    made.incrementAndGet();
    if (closing || !queue.offer(span(call, offsetNanos, resource, scope, ids))) {
      queueFull.incrementAndGet();
    }
  }

  /** Spans dropped so far: not queued, or in batches that failed. */
  public long dropped() {
    return queueFull.get() + failed.get();
  }

  /** The span of {@code call}, ending at its return converted with {@code offsetNanos}. */
  static SpanData span(Call call, long offsetNanos, Resource resource,
      InstrumentationScopeInfo scope, IdGenerator ids) {
    long end = call.endMonotonicNanos() + offsetNanos;
    SpanContext context = SpanContext.create(ids.generateTraceId(), ids.generateSpanId(),
        TraceFlags.getSampled(), TraceState.getDefault());
    return new ProbeSpanData(call.name(), context, end - call.durationNanos(), end,
        attributes(call), resource, scope);
  }

  static Attributes attributes(Call call) {
    AttributesBuilder b = Attributes.builder()
        .put(SITE, call.site())
        .put(THREAD, (long) call.tid())
        .put(PID, (long) call.pid());
    if (call.args() != null) {
      for (int i = 0; i < ARGS.size(); i++) {
        b.put(ARGS.get(i), call.args()[i]);
      }
    }
    b.put(RETURN, call.returnValue());
    Decoded d = call.decoded();
    if (d != null) {
      d.arguments().forEach((name, value) -> b.put(ARG_PREFIX + name, value));
      b.put(RETURN_DECODED, d.returnValue()).put(FAILED, d.failed());
      if (d.errorName() != null) {
        b.put(ERROR, d.errorName());
      }
    }
    return b.build();
  }

  private void send() {
    List<SpanData> batch = new ArrayList<>(MAX_BATCH);
    long due = System.nanoTime() + delayNanos;
    while (true) {
      SpanData s;
      try {
        s = queue.poll(Math.max(0, Math.min(POLL_NANOS, due - System.nanoTime())),
            TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        return; // close gave up waiting: what is left is counted there
      }
      if (s != null) {
        batch.add(s);
        queue.drainTo(batch, MAX_BATCH - batch.size());
      }
      boolean last = closing && queue.isEmpty();
      if (batch.size() >= MAX_BATCH || System.nanoTime() >= due || last) {
        if (!batch.isEmpty()) {
          export(batch);
          batch = new ArrayList<>(MAX_BATCH);
        }
        due = System.nanoTime() + delayNanos;
      }
      if (last) {
        return;
      }
    }
  }

  private void export(List<SpanData> batch) {
    CompletableResultCode code = exporter.export(batch);
    code.join(exportWaitMillis, TimeUnit.MILLISECONDS);
    if (code.isDone() && code.isSuccess()) {
      delivered.addAndGet(batch.size());
    } else {
      failed.addAndGet(batch.size());
      lastFailure.set(code.isDone() ? ExportTally.describe(code.getFailureThrowable())
          : "no answer within " + exportWaitMillis + " ms");
    }
  }

  /**
   * Sends what is queued and stops, waiting at most {@code timeout}; idempotent.
   *
   * @return the spans made and dropped (everything not delivered by now)
   */
  public synchronized Result close(Duration timeout) {
    if (result != null) {
      return result;
    }
    closing = true;
    try {
      sender.join(Math.max(1, timeout.toMillis()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    boolean gaveUp = sender.isAlive();
    if (gaveUp) {
      sender.interrupt();
    }
    exporter.shutdown().join(timeout.toMillis(), TimeUnit.MILLISECONDS);
    long spans = made.get();
    String failure = lastFailure.get();
    if (failure.isEmpty() && gaveUp) {
      failure = "spans still queued after " + timeout;
    }
    result = new Result(spans, spans - delivered.get(), failure);
    return result;
  }
}
