package dev.polystack.plugin.api;

import java.util.List;

/**
 * Second level of the lifecycle: what a plug-in learned about one binary. Immutable and shared
 * by every process that maps the same binary.
 *
 * @since 1.0
 */
public interface RuntimeBinary {

  /** Human-readable runtime and version family, e.g. {@code "LuaJIT 2.1 (OpenResty, GC64)"}. */
  String runtime();

  /** Why the plug-in believes this is its runtime: symbols, strings, FDE shapes found. */
  List<String> evidence();

  /** Offsets discovered in this binary, each with where it came from. */
  default List<DiscoveredOffset> offsets() {
    return List.of();
  }

  /**
   * Code of the runtime's interpreter in module virtual addresses; a native frame whose PC lies
   * here is handed to the plug-in's walk.
   */
  default List<CodeRange> codeRanges() {
    return List.of();
  }

  /**
   * Third level: attach to one process that maps this binary at {@code loadBias} (runtime
   * address minus module virtual address). The default instance walks nothing, for plug-ins
   * that only detect.
   */
  default RuntimeInstance attach(ProcessContext process, long loadBias) throws AttachException {
    return new RuntimeInstance() {};
  }
}
