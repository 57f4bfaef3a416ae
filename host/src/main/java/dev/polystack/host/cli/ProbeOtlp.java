package dev.polystack.host.cli;

import dev.polystack.host.bpf.ProbeMonitor;
import dev.polystack.host.monitor.ProbeSession;
import dev.polystack.host.monitor.ProbeSite;
import dev.polystack.host.monitor.SiteDecoders;
import dev.polystack.host.monitor.SiteSpec;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.TargetDescriber;
import dev.polystack.otel.otlp.CallExporter;
import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.OtlpResource;
import dev.polystack.otel.otlp.ProbeMetrics;
import dev.polystack.otel.otlp.ProbeSpans;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code probe}'s OTLP metrics, in front of the local output: the kernel's figures, read at
 * every poll of the run, exported every interval and once at the end; and for an args run with
 * {@code %return} sites, one span per returned call. The exporters start when the probes are
 * in, so a launched command's resource is its own process.
 */
final class ProbeOtlp implements ProbeSession.Sink {
  /** Kernel counters that are losses: hits not counted, records not delivered. */
  private static final List<String> LOSSES = List.of("ring_full", "thread_table_full",
      "return_unmatched", "no_site", "return_args_lost");
  /** Spans that did not reach the receiver (ProbeSpans). */
  static final String SPANS_DROPPED = "spans_dropped";

  private final ProbeSession.Sink local;
  private final OtlpConfig config;
  private final Duration interval;
  private final ProcFs proc;
  private final boolean latency;
  private final boolean args;
  private volatile ProbeMetrics.Snapshot latest;
  private ProbeMetrics metrics;
  private ProbeSpans spans;
  private ProbeSpans.Result spansResult;

  ProbeOtlp(ProbeSession.Sink local, OtlpConfig config, Duration interval, ProcFs proc,
      ProbeMonitor.Kind kind) {
    this.local = local;
    this.config = config;
    this.interval = interval;
    this.proc = proc;
    this.latency = kind == ProbeMonitor.Kind.LATENCY;
    this.args = kind == ProbeMonitor.Kind.ARGS;
  }

  @Override
  public void started(int pid, List<ProbeSite> sites) throws IOException {
    if (metrics == null) {
      OtlpResource resource = OtlpResource.forTarget(TargetDescriber.describe(proc, pid), config);
      if (args && sites.stream().anyMatch(s -> s.spec().atReturn())) {
        spans = ProbeSpans.start(config, resource, CallExporter.monotonicToEpochOffsetNanos(),
            interval);
      }
      metrics = ProbeMetrics.start(config, resource, interval, () -> latest);
    }
    local.started(pid, sites);
  }

  @Override
  public void decoders(SiteDecoders decoders) {
    local.decoders(decoders);
  }

  @Override
  public void hit(ProbeSession.Hit hit) throws IOException {
    local.hit(hit);
    if (spans != null && hit.atReturn()) {
      SiteSpec s = hit.site().spec();
      spans.add(new ProbeSpans.Call(new SiteSpec(s.module(), s.symbol(), s.offset(), false)
          .toString(), hit.site().name(), hit.pid(), hit.tid(), hit.args(), hit.rax(),
          hit.monotonicNanos(), hit.durationNanos(), decoded(hit.decoded())));
    }
  }

  /** A decoder's answer as the span's decoded attributes; null when the call was not decoded. */
  private static ProbeSpans.Decoded decoded(SiteDecoders.Decoded d) {
    if (d == null) {
      return null;
    }
    Map<String, String> arguments = new LinkedHashMap<>();
    d.arguments().forEach(a -> arguments.put(a.name(), a.value()));
    return new ProbeSpans.Decoded(arguments, d.returned().value(), d.returned().failed(),
        d.returned().errorName());
  }

  @Override
  public void flush() throws IOException {
    local.flush();
  }

  @Override
  public void progress(ProbeSession.Figures figures) {
    latest = snapshot(figures);
    local.progress(figures);
  }

  private ProbeMetrics.Snapshot snapshot(ProbeSession.Figures f) {
    List<ProbeMetrics.Site> sites = f.sites().stream().map(s -> new ProbeMetrics.Site(
        s.site().name(), s.calls(), latency ? s.latency().buckets() : null,
        s.latency().sumNanos(), s.latency().maxNanos())).toList();
    Map<String, Long> lost = new LinkedHashMap<>();
    LOSSES.forEach(l -> lost.put(l, f.counters().getOrDefault(l, 0L)));
    if (spans != null) {
      lost.put(SPANS_DROPPED, spansResult != null ? spansResult.dropped() : spans.dropped());
    }
    return new ProbeMetrics.Snapshot(sites, lost);
  }

  /**
   * Sends the spans still queued and stops their exporter, waiting at most {@code timeout};
   * null when the run exports no spans. Before the summary, which reports the drops.
   */
  ProbeSpans.Result finishSpans(Duration timeout) {
    if (spans == null) {
      return null;
    }
    spansResult = spans.close(timeout);
    return spansResult;
  }

  /**
   * Exports the final figures and stops; null if the export never started (the run failed
   * before its probes were in), else empty or what went wrong (spans first: see finishSpans).
   */
  String finish(ProbeSession.Result result, Duration timeout) {
    if (metrics == null) {
      return null;
    }
    ProbeSpans.Result sent = finishSpans(timeout);
    if (result != null) {
      latest = snapshot(result.figures());
    }
    String problem = metrics.close(timeout);
    return sent != null && !sent.failure().isEmpty()
        ? sent.dropped() + " of " + sent.spans() + " spans dropped: " + sent.failure()
        : problem;
  }
}
