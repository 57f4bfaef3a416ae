package dev.polystack.host.cli;

import dev.polystack.host.session.IntervalListener;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.OtlpResource;
import dev.polystack.otel.otlp.ProfileExporter;
import dev.polystack.otel.otlp.ProfilesSender;
import dev.polystack.otel.otlp.SessionMetrics;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code record}'s OTLP stream: each interval's samples go to the profile exporter (which never
 * blocks), the run's statistics and loss counters to the session metrics, started when the
 * first interval names the target. Neither may hold up the caller: it is the thread that cuts
 * the intervals, and a late cut merges intervals into one request.
 */
final class OtlpExport implements IntervalListener {

  /** How the export went, for the summary and the exit code. */
  record Report(String target, ProfileExporter.Stats profiles, String metricsFailure) {
    boolean ok() {
      return profiles.ok() && metricsFailure.isEmpty();
    }
  }

  private final OtlpConfig config;
  private final Duration interval;
  private final ProfileExporter profiles;
  private volatile OtlpResource resource;
  private volatile CompletableFuture<SessionMetrics> metrics;
  private volatile Totals totals = new Totals(0, Map.of(), Map.of());

  OtlpExport(OtlpConfig config, Duration interval) {
    this.config = config;
    this.interval = interval;
    this.profiles = new ProfileExporter(ProfilesSender.create(config), this::resource,
        queueFor(interval));
  }

  /**
   * A minute of backlog, at least {@link ProfileExporter#DEFAULT_QUEUE} intervals: enough for a
   * Collector restart or the retries of one request, while the samples are in memory anyway.
   */
  static int queueFor(Duration interval) {
    long perMinute = Duration.ofMinutes(1).toNanos() / Math.max(1, interval.toNanos());
    return (int) Math.max(ProfileExporter.DEFAULT_QUEUE, Math.min(600, perMinute));
  }

  private synchronized OtlpResource resource(TargetInfo target) {
    if (resource == null) {
      resource = OtlpResource.forTarget(target, config);
    }
    return resource;
  }

  @Override
  public void interval(Recording samples, Totals t, boolean last) {
    totals = t;
    if (metrics == null) {
      // Starting the SDK loads its classes and the HTTP client's: a second or more on a slow
      // host, long enough to merge the first intervals of a short record if done here.
      OtlpResource r = resource(samples.target());
      metrics = CompletableFuture.supplyAsync(() -> SessionMetrics.start(config, r, interval,
          () -> new SessionMetrics.Snapshot(totals.samples(), totals.losses(), totals.errors(),
              profiles.stats())), OtlpExport::daemon);
    }
    profiles.offer(samples);
  }

  private static void daemon(Runnable task) {
    Thread t = new Thread(task, "polystack-otlp-metrics-start");
    t.setDaemon(true);
    t.start();
  }

  /** Sends what is left (profiles first: their failures are part of the final metrics). */
  Report finish(Duration timeout) {
    ProfileExporter.Stats stats = profiles.close(timeout);
    return new Report(profiles.target(), stats, closeMetrics(timeout));
  }

  private String closeMetrics(Duration timeout) {
    if (metrics == null) {
      return "";
    }
    try {
      return metrics.get(timeout.toMillis(), TimeUnit.MILLISECONDS).close(timeout);
    } catch (ExecutionException e) {
      return "cannot start the metrics export: " + e.getCause().getMessage();
    } catch (TimeoutException e) {
      return "the metrics export did not start within " + timeout;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted while starting the metrics export";
    }
  }
}
