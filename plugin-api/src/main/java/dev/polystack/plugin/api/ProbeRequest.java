package dev.polystack.plugin.api;

import java.util.List;

/**
 * What the user asked to trace.
 *
 * @param functions {@code NAME} or {@code NAME@VERSION}; empty means the plug-in's default set
 * @param slotsPerThread hardware breakpoint slots available per thread (4 on x86-64)
 */
public record ProbeRequest(List<String> functions, int slotsPerThread) {
  public ProbeRequest {
    functions = List.copyOf(functions);
    if (slotsPerThread <= 0) {
      throw new IllegalArgumentException("slotsPerThread must be > 0");
    }
  }
}
