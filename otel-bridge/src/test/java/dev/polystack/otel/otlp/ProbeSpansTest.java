package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.model.TargetInfo;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.IdGenerator;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.data.StatusData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ProbeSpansTest {
  private static final OtlpResource RESOURCE = OtlpResource.forTarget(
      new TargetInfo(42, "/usr/bin/app", List.of("app")), OtlpConfig.defaults());
  private static final InstrumentationScopeInfo SCOPE = InstrumentationScopeInfo.create("polystack");

  private static ProbeSpans.Call call(long arg0, long[] args) {
    return new ProbeSpans.Call("libc.so.6:write", "libc.so.6:write%return", 42, 43, args,
        -5, 1_000_000_000L, 2_500_000L);
  }

  @Test
  void aCallBecomesAnEndedRootSpanFromItsEntryToItsReturn() {
    long[] args = {7, 0x7fff_0000_1000L, 3, 0, -1, Long.MIN_VALUE};
    SpanData s = ProbeSpans.span(call(7, args), 5_000_000_000L, RESOURCE.toSdk(), SCOPE,
        IdGenerator.random());
    assertEquals("libc.so.6:write", s.getName());
    assertEquals(SpanKind.INTERNAL, s.getKind());
    assertEquals(6_000_000_000L, s.getEndEpochNanos());
    assertEquals(6_000_000_000L - 2_500_000L, s.getStartEpochNanos());
    assertTrue(s.hasEnded());
    assertFalse(s.getParentSpanContext().isValid());
    assertTrue(s.getSpanContext().isValid());
    assertTrue(s.getSpanContext().isSampled());
    assertEquals(StatusData.unset(), s.getStatus());
    assertTrue(s.getEvents().isEmpty() && s.getLinks().isEmpty());
    assertEquals("libc.so.6:write%return", s.getAttributes().get(ProbeSpans.SITE));
    assertEquals(43L, s.getAttributes().get(AttributeKey.longKey("thread.id")));
    assertEquals(42L, s.getAttributes().get(AttributeKey.longKey("process.pid")));
    for (int i = 0; i < 6; i++) {
      assertEquals(args[i], s.getAttributes().get(
          AttributeKey.longKey("polystack.probe.arg." + i)), "arg " + i);
    }
    assertEquals(-5L, s.getAttributes().get(AttributeKey.longKey("polystack.probe.return")));
    assertEquals(10, s.getTotalAttributeCount());
    assertEquals(RESOURCE.toSdk(), s.getResource());
    assertEquals("polystack", s.getInstrumentationScopeInfo().getName());
  }

  @Test
  void aDecodedCallAddsItsNamedArgumentsAndReturnBesideTheRawRegisters() {
    long[] args = {1, 0x7ffd_2c1e_9a40L, 0, 0, 0, 0};
    Map<String, String> named = new LinkedHashMap<>();
    named.put("clockid", "CLOCK_MONOTONIC");
    named.put("tp", "0x7ffd2c1e9a40");
    ProbeSpans.Call call = new ProbeSpans.Call("[vdso]:clock_gettime",
        "[vdso]:clock_gettime%return", 42, 43, args, -22, 1_000L, 10L,
        new ProbeSpans.Decoded(named, "-EINVAL", true, "EINVAL"));
    Attributes a = ProbeSpans.attributes(call);
    assertEquals("CLOCK_MONOTONIC", a.get(AttributeKey.stringKey("polystack.probe.arg.clockid")));
    assertEquals("0x7ffd2c1e9a40", a.get(AttributeKey.stringKey("polystack.probe.arg.tp")));
    assertEquals(1L, a.get(AttributeKey.longKey("polystack.probe.arg.0")));
    assertEquals(-22L, a.get(AttributeKey.longKey("polystack.probe.return")));
    assertEquals("-EINVAL", a.get(AttributeKey.stringKey("polystack.probe.return.decoded")));
    assertEquals(true, a.get(AttributeKey.booleanKey("polystack.probe.failed")));
    assertEquals("EINVAL", a.get(AttributeKey.stringKey("polystack.probe.error")));
    assertEquals(15, a.size());
    Attributes ok = ProbeSpans.attributes(new ProbeSpans.Call("f", "f%return", 1, 2, null, 0,
        1L, 0L, new ProbeSpans.Decoded(Map.of(), "0", false, null)));
    assertEquals("0", ok.get(AttributeKey.stringKey("polystack.probe.return.decoded")));
    assertNull(ok.get(AttributeKey.stringKey("polystack.probe.error")));
  }

  @Test
  void argsNotKeptAreLeftOutAndEveryCallHasItsOwnTrace() {
    Set<String> traces = new HashSet<>();
    IdGenerator ids = IdGenerator.random();
    for (int i = 0; i < 100; i++) {
      SpanData s = ProbeSpans.span(call(0, null), 0, Resource.empty(), SCOPE, ids);
      assertNull(s.getAttributes().get(AttributeKey.longKey("polystack.probe.arg.0")));
      assertEquals(-5L, s.getAttributes().get(AttributeKey.longKey("polystack.probe.return")));
      traces.add(s.getTraceId());
    }
    assertEquals(100, traces.size());
  }

  @Test
  void aCallIsValidated() {
    assertThrows(IllegalArgumentException.class, () -> new ProbeSpans.Call("f", "f%return", 1,
        1, new long[5], 0, 10, 1));
    assertThrows(IllegalArgumentException.class, () -> new ProbeSpans.Call("f", "f%return", 1,
        1, null, 0, 10, -1));
  }

  /** Keeps what it is given, or fails every batch. */
  private static final class Receiver implements SpanExporter {
    final List<Collection<SpanData>> batches = new ArrayList<>();
    final boolean fail;

    Receiver(boolean fail) {
      this.fail = fail;
    }

    @Override
    public synchronized CompletableResultCode export(Collection<SpanData> spans) {
      if (fail) {
        return CompletableResultCode.ofExceptionalFailure(new IllegalStateException("refused"));
      }
      batches.add(List.copyOf(spans));
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode flush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      return CompletableResultCode.ofSuccess();
    }
  }

  @Test
  void everySpanLeavesInBatchesOfAtMostTheBatchSize() {
    Receiver r = new Receiver(false);
    ProbeSpans spans = ProbeSpans.start(r, RESOURCE, 0, Duration.ofHours(1),
        Duration.ofSeconds(10));
    int n = 3 * ProbeSpans.MAX_BATCH + 7;
    for (int i = 0; i < n; i++) {
      spans.add(call(i, new long[] {i, 0, 0, 0, 0, 0}));
    }
    ProbeSpans.Result result = spans.close(Duration.ofSeconds(30));
    assertEquals(new ProbeSpans.Result(n, 0, ""), result);
    assertEquals(n, r.batches.stream().mapToInt(Collection::size).sum());
    assertTrue(r.batches.stream().allMatch(b -> b.size() <= ProbeSpans.MAX_BATCH));
    assertEquals(result, spans.close(Duration.ofSeconds(1)));
  }

  @Test
  void failedBatchesAndAFullQueueAreCountedAsDropped() {
    ProbeSpans failing = ProbeSpans.start(new Receiver(true), RESOURCE, 0, Duration.ofHours(1),
        Duration.ofSeconds(10));
    for (int i = 0; i < 10; i++) {
      failing.add(call(i, null));
    }
    ProbeSpans.Result r = failing.close(Duration.ofSeconds(30));
    assertEquals(10, r.spans());
    assertEquals(10, r.dropped());
    assertEquals("refused", r.failure());
    assertEquals(10, failing.dropped());

    ProbeSpans closed = ProbeSpans.start(new Receiver(false), RESOURCE, 0, Duration.ofHours(1),
        Duration.ofSeconds(10));
    closed.close(Duration.ofSeconds(30));
    closed.add(call(0, null)); // no queue any more: dropped, not lost
    assertEquals(1, closed.dropped());
  }

  @Test
  void spansBeyondTheQueueWhileABatchIsInFlightAreDropped() {
    CompletableResultCode answer = new CompletableResultCode();
    List<Integer> received = new ArrayList<>();
    SpanExporter slow = new SpanExporter() {
      @Override
      public synchronized CompletableResultCode export(Collection<SpanData> spans) {
        received.add(spans.size());
        return answer;
      }

      @Override
      public CompletableResultCode flush() {
        return CompletableResultCode.ofSuccess();
      }

      @Override
      public CompletableResultCode shutdown() {
        return CompletableResultCode.ofSuccess();
      }
    };
    ProbeSpans spans = ProbeSpans.start(slow, RESOURCE, 0, Duration.ofHours(1),
        Duration.ofSeconds(60));
    int n = ProbeSpans.MAX_QUEUED + 2 * ProbeSpans.MAX_BATCH;
    for (int i = 0; i < n; i++) {
      spans.add(call(i, null));
    }
    // At most one batch is in the sender's hands and the queue's worth waits: the rest is dropped.
    long full = spans.dropped();
    assertTrue(full >= ProbeSpans.MAX_BATCH, full + " dropped");
    answer.succeed();
    ProbeSpans.Result r = spans.close(Duration.ofSeconds(60));
    long sent;
    synchronized (slow) {
      sent = received.stream().mapToLong(Integer::longValue).sum();
    }
    assertEquals(n, r.spans());
    assertEquals(n - sent, r.dropped());
    assertEquals(full, r.dropped());
    assertEquals("", r.failure());
  }
}
