package dev.polystack.host.pipeline;

import dev.polystack.otel.model.TargetInfo;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * What a tracked process's outputs name it by: its executable and arguments, and the OTLP
 * resource built from them.
 */
record ProcessDescription(TargetInfo info, Map<String, Object> resource) {
  ProcessDescription {
    Objects.requireNonNull(info, "info");
    resource = Map.copyOf(resource);
  }

  static ProcessDescription of(TargetInfo info,
      Function<TargetInfo, Map<String, Object>> resourceOf) {
    return new ProcessDescription(info, resourceOf.apply(info));
  }

  /**
   * This one, or a new one from {@code describe} while this one names nothing: /proc read in
   * the middle of an exec has neither executable nor arguments yet, and the program the process
   * runs now is known later.
   */
  ProcessDescription completed(Supplier<TargetInfo> describe,
      Function<TargetInfo, Map<String, Object>> resourceOf) {
    if (!info.executablePath().isEmpty() || !info.commandLine().isEmpty()) {
      return this;
    }
    return of(describe.get(), resourceOf);
  }
}
