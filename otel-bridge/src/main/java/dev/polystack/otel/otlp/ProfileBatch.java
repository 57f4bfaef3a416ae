package dev.polystack.otel.otlp;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import java.util.List;
import java.util.Objects;

/**
 * The profiles of one export interval of several processes, each with its own resource: sent
 * as one request ({@link ProfilesMapper#toRequest(List)}).
 */
public record ProfileBatch(List<Part> parts) {
  public ProfileBatch {
    parts = List.copyOf(parts);
  }

  /** One process's samples and the resource they belong to. */
  public record Part(Recording recording, OtlpResource resource) {
    public Part {
      Objects.requireNonNull(recording, "recording");
      Objects.requireNonNull(resource, "resource");
    }
  }

  /** Samples in the batch (each merged sample counts its periods, as {@link Sample#count}). */
  public long samples() {
    return parts.stream().mapToLong(p -> Sample.count(p.recording().samples())).sum();
  }
}
