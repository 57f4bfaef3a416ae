package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * One probe hit as the backend captured it.
 *
 * @param site the probe that fired (module virtual address as planned)
 * @param pid the process
 * @param tid the thread that hit it
 * @param monotonicNanos CLOCK_MONOTONIC time of the hit
 * @param registers registers at the hit
 * @param stack a copy of the stack from {@code registers.sp()} upwards, possibly empty
 * @param memory memory of the stopped thread (exact backends), or null when the thread was not
 *     stopped and later reads would race
 * @since 1.0
 */
public record ProbeHit(
    ProbeSite site,
    int pid,
    int tid,
    long monotonicNanos,
    Registers registers,
    byte[] stack,
    RemoteMemory memory) {
  public ProbeHit {
    Objects.requireNonNull(site, "site");
    Objects.requireNonNull(registers, "registers");
    Objects.requireNonNull(stack, "stack");
  }
}
