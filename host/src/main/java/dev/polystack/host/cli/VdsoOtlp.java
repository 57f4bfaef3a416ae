package dev.polystack.host.cli;

import dev.polystack.host.probes.ResolvedPlan;
import dev.polystack.host.probes.TraceSession;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.TargetDescriber;
import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.TraceCounters;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.otel.otlp.CallExporter;
import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.OtlpResource;
import dev.polystack.plugin.api.CallRecord;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;

/**
 * {@code vdso}'s OTLP stream, in front of the local output: every emitted call becomes a span,
 * every completed call (filtered or not) counts in the call metrics, and at the end every loss
 * counter of the session becomes {@code polystack.vdso.records.lost{reason}}. The exporter
 * starts when the plan names the target, so a launched command's resource is its own process.
 * The SDK batches and sends on its own threads: the tracer thread only hands spans over.
 */
final class VdsoOtlp implements TraceSession.Sink {

  /** How the export went, for the summary and the exit code. */
  record Report(String target, CallExporter.Result result) {}

  private final TraceSession.Sink local;
  private final OtlpConfig config;
  private final Duration interval;
  private final ProcFs proc;
  private final long epochOffset = CallExporter.monotonicToEpochOffsetNanos();
  private CallExporter exporter;

  VdsoOtlp(TraceSession.Sink local, OtlpConfig config, Duration interval, ProcFs proc) {
    this.local = local;
    this.config = config;
    this.interval = interval;
    this.proc = proc;
  }

  @Override
  public void plan(ResolvedPlan plan) throws IOException {
    if (exporter == null) {
      exporter = CallExporter.create(config, OtlpResource.forTarget(TargetDescriber.describe(proc, plan.pid()), config),
          epochOffset, interval);
    }
    local.plan(plan);
  }

  @Override
  public void counted(CallRecord record) {
    exporter.count(record);
    local.counted(record);
  }

  @Override
  public void call(long seq, CallRecord record, long realtimeNanos) throws IOException {
    exporter.span(record);
    local.call(seq, record, realtimeNanos);
  }

  @Override
  public void flush() throws IOException {
    local.flush();
  }

  /**
   * Reports the session's loss counters, sends what is left and stops; null if the session
   * never started (nothing was resolved, so nothing was made).
   */
  Report finish(Map<String, Long> counters, Duration timeout) {
    if (exporter == null) {
      return null;
    }
    String ringLost = TraceCounters.RING_LOST.name();
    exporter.lost(ringLost, counters.getOrDefault(ringLost, 0L));
    // Calls not recorded, as declared; notes (every call recorded) are not losses.
    TraceCounters.registry().ofKind(counters, CounterKind.LOSS).forEach((reason, n) -> {
      if (!reason.equals(ringLost)) {
        exporter.lost(reason, n);
      }
    });
    return new Report(target(), exporter.close(timeout));
  }

  private String target() {
    String base = config.baseUri().toString();
    return base + " (" + config.protocol().id() + ")";
  }
}
