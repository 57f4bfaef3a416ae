package dev.polystack.plugin.api;

import java.util.Optional;
import java.util.OptionalLong;

/**
 * What the host captured of one thread for one sample: registers, the top of its stack, and
 * access to the rest of its memory. Live, memory reads happen while the thread is stopped (ptrace
 * mode) or after the tick, with the thread running (perf and bpf modes, and ptrace mode when it
 * walks its copy after the resume); replayed, they come from a snapshot. The host makes one
 * per sample and opens a {@link SampleWalker} on it ({@link RuntimeInstance#openSample}).
 *
 * @since 1.0
 */
public interface ThreadContext {

  int pid();

  int tid();

  Registers registers();

  /**
   * Memory of the process. Reads that fall into the captured stack window are served from the
   * copy, so they see the same instant as {@link #registers()}.
   */
  RemoteMemory memory();

  /** Address of the first byte of the captured stack copy (normally the stack pointer). */
  long stackStart();

  /** Bytes of stack captured from {@link #stackStart()} upwards; may be empty. */
  int stackLength();

  /**
   * The thread's thread pointer (x86-64: its FS base, glibc's {@code struct pthread}) at the
   * sample: what a plan's {@code ThreadPointer} step read at the tick (bpf mode), or the stopped
   * thread's (ptrace mode); empty where the capture has none (perf mode).
   *
   * @since 1.6
   */
  default OptionalLong threadPointer() {
    return OptionalLong.empty();
  }

  /**
   * What {@code plan} did at this sample's tick; empty when it did not run for this sample (no
   * tick capture, or a plan installed after the tick, or one the host did not run: a process
   * runs at most 3 plug-in plans, docs/capture-plans.md).
   *
   * @since 1.6
   */
  default Optional<PlanOutcome> planOutcome(CapturePlan plan) {
    return Optional.empty();
  }
}
