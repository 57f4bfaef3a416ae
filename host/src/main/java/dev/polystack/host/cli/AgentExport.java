package dev.polystack.host.cli;

import dev.polystack.host.pipeline.HostPipeline;
import dev.polystack.host.pipeline.PipelineStats;
import dev.polystack.host.pipeline.ProcessProfile;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.otel.otlp.AgentMetrics;
import dev.polystack.otel.otlp.OtlpConfig;
import dev.polystack.otel.otlp.OtlpResource;
import dev.polystack.otel.otlp.ProfileBatch;
import dev.polystack.otel.otlp.ProfileExporter;
import dev.polystack.otel.otlp.ProfilesSender;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The agent's OTLP side: each interval's profiles as one request (one resource per process)
 * through the profile exporter, which never blocks the pipeline (a slow or absent Collector
 * costs a bounded queue and counted drops), and the agent's health as metrics.
 */
final class AgentExport implements HostPipeline.Sink {
  private final ProfileExporter profiles;
  private final AgentMetrics metrics;
  private volatile PipelineStats stats =
      new PipelineStats(0, 0, 0, Map.of(), Map.of(), Map.of(), Map.of());

  AgentExport(OtlpConfig config, Duration interval) {
    this.profiles = new ProfileExporter(ProfilesSender.create(config),
        target -> OtlpResource.forTarget(target, config), OtlpExport.queueFor(interval));
    this.metrics = AgentMetrics.start(config, selfResource(config), interval, this::snapshot);
  }

  @Override
  public void interval(List<ProcessProfile> batch, PipelineStats s,
      boolean last) {
    stats = s;
    List<ProfileBatch.Part> parts = new ArrayList<>(batch.size());
    for (ProcessProfile p : batch) {
      parts.add(new ProfileBatch.Part(p.recording(), new OtlpResource(p.resource())));
    }
    profiles.offer(new ProfileBatch(parts));
  }

  PipelineStats stats() {
    return stats;
  }

  ProfileExporter.Stats exportStats() {
    return profiles.stats();
  }

  /** Sends what is queued (profiles first), then the last metrics; the metrics' failure, if any. */
  String finish(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    profiles.close(timeout.multipliedBy(2).dividedBy(3));
    return metrics.close(Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime())));
  }

  private AgentMetrics.Snapshot snapshot() {
    PipelineStats s = stats;
    return new AgentMetrics.Snapshot(s.samples(), s.losses(), s.errors(), s.processesTracked(),
        s.processesSeen(), profiles.stats(), cpuSeconds(), rssBytes());
  }

  /** The agent's own resource: its health is about polystack, not a profiled process. */
  private static OtlpResource selfResource(OtlpConfig config) {
    Map<String, Object> a = new LinkedHashMap<>();
    a.put("service.name", "polystack");
    a.put("service.version", OtlpResource.version());
    a.put("process.pid", ProcessHandle.current().pid());
    OtlpResource forSelf = OtlpResource.forTarget(
        new TargetInfo((int) ProcessHandle.current().pid(), "", List.of("polystack")), config);
    forSelf.attributes().forEach((k, v) -> {
      if (k.startsWith("host.")) {
        a.putIfAbsent(k, v);
      }
    });
    String machineId = machineId();
    if (!machineId.isEmpty()) {
      a.put("host.id", machineId);
    }
    return new OtlpResource(a);
  }

  static double cpuSeconds() {
    var os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
      return sun.getProcessCpuTime() / 1e9;
    }
    return 0;
  }

  /** Resident bytes from /proc/self/statm (pages), 0 when unreadable. */
  static long rssBytes() {
    try {
      String[] f = Files.readString(Path.of("/proc/self/statm")).trim().split("\\s+");
      return Long.parseLong(f[1]) * 4096L;
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  private static String machineId() {
    try {
      return Files.readString(Path.of("/etc/machine-id")).strip();
    } catch (IOException e) {
      return "";
    }
  }
}
