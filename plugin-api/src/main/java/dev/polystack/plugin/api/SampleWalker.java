package dev.polystack.plugin.api;

/**
 * One sample of one thread, opened by {@link RuntimeInstance#openSample} (since API 1.10): what
 * the walk learns while the host unwinds (frames already walked, entries already matched) lives
 * in this object, not in per-thread state. The host calls it from one thread, holding the
 * instance's monitor ({@code synchronized (instance)}) during each call, first {@link
 * #unwindCaller} per frame while it unwinds, then {@link #walk} once, and then drops it.
 *
 * @since 1.10
 */
public interface SampleWalker {

  /**
   * Unwinds one frame of this runtime's code for this sample's thread: the registers of its
   * caller, of which RIP and RSP must be set and callee-saved registers kept, or null to let the
   * host use the code's CFI (or its frame-pointer fallback). Asked first for PCs in the
   * instance's code ranges, and for PCs in no module at all (JIT code the host has not been
   * told about yet).
   */
  default Registers unwindCaller(Registers frame) {
    return null;
  }

  /**
   * Walks the whole sample once the native unwind is done: every native frame of it in this
   * instance's code, leaf first, and the answer says which of them each run of runtime frames
   * replaces. Never throws for bad target data.
   */
  SampleWalk walk(SampleRequest request);
}
