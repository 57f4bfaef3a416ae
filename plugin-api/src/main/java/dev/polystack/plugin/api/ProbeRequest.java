package dev.polystack.plugin.api;

import java.util.List;

/**
 * What the user asked to trace.
 *
 * @param functions {@code NAME} or {@code NAME@VERSION}; empty means the plug-in's default set
 * @param slotsPerThread hardware breakpoint slots available per thread (4 on x86-64)
 * @param returnInstructions the backend breaks on each function's own return instructions and
 *     pairs in the kernel: the plan must say them in {@link ProbePlan#exits()}, and a function
 *     fits when its entry and all its returns fit the slots (since API 1.2)
 * @param entrySlotsOnly the backend learns return sites at run time and serves them from slots
 *     it shares between the functions, lending a function's entry slot while a thread is inside
 *     it: a function needs only its entry slot (since API 1.4; false otherwise: two slots)
 * @since 1.0
 */
public record ProbeRequest(List<String> functions, int slotsPerThread,
    boolean returnInstructions, boolean entrySlotsOnly) {
  /** A request for a backend that learns return sites at run time. */
  public ProbeRequest(List<String> functions, int slotsPerThread) {
    this(functions, slotsPerThread, false, false);
  }

  /** As before API 1.4: without shared return slots. */
  public ProbeRequest(List<String> functions, int slotsPerThread, boolean returnInstructions) {
    this(functions, slotsPerThread, returnInstructions, false);
  }

  public ProbeRequest {
    functions = List.copyOf(functions);
    if (slotsPerThread <= 0) {
      throw new IllegalArgumentException("slotsPerThread must be > 0");
    }
    if (returnInstructions && entrySlotsOnly) {
      throw new IllegalArgumentException("return instructions are fixed slots, not lent ones");
    }
  }
}
