package dev.polystack.plugin.api;

/**
 * What a plug-in says it can do, listed by {@code polystack plugins}. The interfaces a plug-in
 * implements decide what the host calls (a default method that is not overridden does nothing);
 * the capabilities the host acts on are {@link #WALK_FRAMES}: samples open a walker ({@link
 * RuntimeInstance#openSample}) only on plug-ins that declare it (since API 2.0), {@link
 * #CAPTURE_AT_TICK}: bpf mode asks {@link RuntimeInstance#capturePlans()} only of plug-ins that
 * declare it, and {@link #ALLOCATOR_SITES}: allocation profiles ask {@link
 * RuntimeInstance#allocatorSites()} only of plug-ins that declare it.
 *
 * @since 1.0
 */
public enum Capability {
  /** Recognises its runtime in a module image by content (symbols, FDEs, strings). */
  DETECT,
  /** Discovers the offsets it needs from the binary, each with provenance. */
  DISCOVER_OFFSETS,
  /**
   * Walks runtime frames of a sample ({@link RuntimeInstance#openSample}) and splices them into
   * the native stack.
   */
  WALK_FRAMES,
  /** Names runtime frames (function, file, line) after the target is resumed. */
  SYMBOLIZE,
  /** Reports code the runtime generates at run time (JIT traces) as code ranges. */
  JIT_CODE,
  /** Declares a {@link CapturePlan}: what to read at the sampling tick (since API 1.1). */
  CAPTURE_AT_TICK,
  /** Plans probe sites (entry and return breakpoints) in a module. */
  PLAN_PROBES,
  /** Decodes probe hits into call records. */
  DECODE_CALLS,
  /**
   * Names the runtime's allocator functions ({@link RuntimeInstance#allocatorSites()}), which
   * allocation profiles probe (since API 1.5).
   */
  ALLOCATOR_SITES,
  /**
   * Resolves runtime-level probe sites to memory to watch ({@link
   * RuntimeInstance#watchPoint(String)}), which {@code probe} asks only of plug-ins that
   * declare it (since API 1.7).
   */
  WATCH_SITES;

  /** Lower-case, dash-separated name as shown to users. */
  public String displayName() {
    return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }
}
