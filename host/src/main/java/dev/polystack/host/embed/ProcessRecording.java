package dev.polystack.host.embed;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import java.util.Map;
import java.util.Objects;

/**
 * One process's samples of one interval, and the OTLP resource attributes that describe the
 * process: {@code process.pid}, {@code process.executable.name}, {@code
 * process.executable.path}, {@code service.name} (the process's own {@code OTEL_SERVICE_NAME},
 * else its executable name), {@code container.id} where its cgroup names one, {@code host.name},
 * {@code host.id}, and {@code process.command_line} when {@link ProfilerConfig#commandLine()}.
 *
 * @param recording the samples, with the modules they point into and what was lost
 * @param resource attribute values are {@code String} or {@code Long}, in a stable order
 */
public record ProcessRecording(Recording recording, Map<String, Object> resource) {
  /** Copies the attributes; {@code recording} is required. */
  public ProcessRecording {
    Objects.requireNonNull(recording, "recording");
    resource = Map.copyOf(resource);
  }

  /** The process id. */
  public int pid() {
    return recording.target().pid();
  }

  /** The executable's file name, as {@code process.executable.name}. */
  public String executableName() {
    return recording.target().executableName();
  }

  /** Samples in this interval (a sample that stands for several ticks counts each). */
  public long samples() {
    return Sample.count(recording.samples());
  }
}
