package dev.polystack.host.embed;

import dev.polystack.otel.otlp.OtlpResource;
import dev.polystack.otel.otlp.ProfileBatch;
import dev.polystack.otel.otlp.ProfilesMapper;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import java.util.ArrayList;
import java.util.List;

/**
 * One interval of a session: a recording per process that had samples in it, the session's
 * figures at the cut, and the same data as one OTLP profiles request (what {@code polystack
 * agent} sends for the interval: a resource per process, one dictionary). Immutable; the
 * request is built on first use, on the caller's thread, and kept.
 */
public final class ProfileInterval {
  private final long sequence;
  private final List<ProcessRecording> processes;
  private final ProfilerStats stats;
  private final boolean last;
  private ExportProfilesServiceRequest request;

  ProfileInterval(long sequence, List<ProcessRecording> processes, ProfilerStats stats,
      boolean last) {
    this.sequence = sequence;
    this.processes = List.copyOf(processes);
    this.stats = stats;
    this.last = last;
  }

  /** 0 for the first interval of the session, then 1, 2, ... (a gap is a dropped interval). */
  public long sequence() {
    return sequence;
  }

  /** The processes with samples in this interval, one recording each. */
  public List<ProcessRecording> processes() {
    return processes;
  }

  /** The session's cumulative figures at this interval's cut. */
  public ProfilerStats stats() {
    return stats;
  }

  /** Whether this is the interval {@link ProfilingSession#stop()} cut: no other follows. */
  public boolean last() {
    return last;
  }

  /** Samples in this interval, over every process. */
  public long samples() {
    return processes.stream().mapToLong(ProcessRecording::samples).sum();
  }

  /**
   * This interval as one OTLP ExportProfilesServiceRequest: a ResourceProfiles per process, in
   * the order of {@link #processes()}, with its resource attributes (docs/otlp.md has the
   * mapping). Empty of resources when no process had samples.
   */
  public synchronized ExportProfilesServiceRequest toOtlpRequest() {
    if (request == null) {
      List<ProfileBatch.Part> parts = new ArrayList<>(processes.size());
      for (ProcessRecording p : processes) {
        parts.add(new ProfileBatch.Part(p.recording(), new OtlpResource(p.resource())));
      }
      request = ProfilesMapper.toRequest(parts);
    }
    return request;
  }

  @Override
  public String toString() {
    return "ProfileInterval[sequence=" + sequence + ", processes=" + processes.size()
        + ", samples=" + samples() + ", last=" + last + "]";
  }
}
