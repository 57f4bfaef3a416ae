package dev.polystack.host.cli;

import dev.polystack.host.bpf.ProbeMonitor;
import dev.polystack.host.monitor.ProbeSession;
import dev.polystack.host.monitor.ProbeSite;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.TargetDescriber;
import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.OtlpResource;
import dev.polystack.otel.otlp.ProbeMetrics;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code probe}'s OTLP metrics, in front of the local output: the kernel's figures, read at
 * every poll of the run, exported every interval and once at the end. The exporter starts when
 * the probes are in, so a launched command's resource is its own process.
 */
final class ProbeOtlp implements ProbeSession.Sink {
  /** Kernel counters that are losses: hits not counted, records not delivered. */
  private static final List<String> LOSSES = List.of("ring_full", "thread_table_full",
      "return_unmatched", "no_site");

  private final ProbeSession.Sink local;
  private final OtlpConfig config;
  private final Duration interval;
  private final ProcFs proc;
  private final boolean latency;
  private volatile ProbeMetrics.Snapshot latest;
  private ProbeMetrics metrics;

  ProbeOtlp(ProbeSession.Sink local, OtlpConfig config, Duration interval, ProcFs proc,
      ProbeMonitor.Kind kind) {
    this.local = local;
    this.config = config;
    this.interval = interval;
    this.proc = proc;
    this.latency = kind == ProbeMonitor.Kind.LATENCY;
  }

  @Override
  public void started(int pid, List<ProbeSite> sites) throws IOException {
    if (metrics == null) {
      metrics = ProbeMetrics.start(config,
          OtlpResource.forTarget(TargetDescriber.describe(proc, pid), config), interval,
          () -> latest);
    }
    local.started(pid, sites);
  }

  @Override
  public void hit(ProbeSession.Hit hit) throws IOException {
    local.hit(hit);
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
    return new ProbeMetrics.Snapshot(sites, lost);
  }

  /**
   * Exports the final figures and stops; null if the export never started (the run failed
   * before its probes were in), else empty or what went wrong.
   */
  String finish(ProbeSession.Result result, Duration timeout) {
    if (metrics == null) {
      return null;
    }
    if (result != null) {
      latest = snapshot(result.figures());
    }
    return metrics.close(timeout);
  }
}
