package dev.polystack.plugin.api;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Third level of the lifecycle: a plug-in attached to one process. The host calls it from one
 * thread at a time, holding the instance's monitor while a sample walker of it runs, but from
 * different threads over its life. Every default does nothing, so a plug-in implements only what its
 * capabilities declare.
 *
 * @since 1.0
 */
public interface RuntimeInstance {

  /**
   * Opens one sample of {@code thread}, asked only of plug-ins that declare {@link
   * Capability#WALK_FRAMES} (the code of others stays native frames): the walker holds
   * what the sample learns, is called from one thread holding this instance's monitor, and is
   * dropped at the sample's end. So the plug-in needs no per-thread state, and no lock of its own
   * for what its {@code synchronized} methods share with the walker. The host asks it first to
   * unwind the frames of this instance's code ({@link SampleWalker#unwindCaller}), then to walk
   * the whole sample once ({@link SampleWalker#walk}).
   *
   * @return the sample's walker; null (or an exception) ends the sample's frames of this
   *     instance in an error frame
   * @since 1.10; since 2.0 the only walk (the per-frame {@code walk}, {@code unwindCaller} and
   *     {@code beginSample} of 1.x are gone)
   */
  default SampleWalker openSample(ThreadContext thread) {
    return null;
  }

  /**
   * Code the runtime created at run time (JIT traces), in runtime addresses; the host re-reads
   * this after {@link #mappingsChanged} and treats PCs in it as belonging to this instance.
   */
  default List<CodeRange> dynamicCodeRanges() {
    return List.of();
  }

  /**
   * What must be read at the sampling tick for this process's walks to see one instant (since
   * API 1.1, with {@link Capability#CAPTURE_AT_TICK}). The host asks again after walks and
   * recompiles only when the answer changes (by {@link CapturePlan#equals}), so return the same
   * plan while nothing it depends on changed. A plan may use what walks learned (an address
   * validated against the process); until then, {@link CapturePlan#NONE}.
   */
  default CapturePlan capturePlan() {
    return CapturePlan.NONE;
  }

  /**
   * Every plan this instance wants run at the tick (since API 2.0; by default its one {@link
   * #capturePlan()}): several plans stop independently, so a part that may fail (a lock's state
   * behind a pointer) can be its own plan and leave the others whole. Each counts against the
   * process's budget of plug-in plans, kept by plug-in id, module, code address and then this
   * order (docs/capture-plans.md, "Bounds"); equal plans share one. Asked as {@link
   * #capturePlan()} is, and answered the same way: the same list while nothing changed.
   *
   * @since 2.0
   */
  default java.util.List<CapturePlan> capturePlans() {
    CapturePlan plan = capturePlan();
    return plan == null || plan.isEmpty() ? java.util.List.of() : java.util.List.of(plan);
  }

  /**
   * The functions through which this runtime allocates in this process (since API 1.5, with
   * {@link Capability#ALLOCATOR_SITES}): an allocation profile probes them as it probes the C
   * library's allocator, so the runtime's allocations carry its stacks. Empty while they are not
   * known yet (a VM not created yet); the host asks again as the process runs, so answer from
   * what is cached and keep the work of finding them bounded.
   *
   * @since 1.5
   */
  default List<AllocatorSite> allocatorSites() {
    return List.of();
  }

  /**
   * The memory a runtime-level probe site names (since API 1.7, with {@link
   * Capability#WATCH_SITES}), e.g. {@code lua:app.lua:12} for the LuaJIT plug-in: the host
   * watches it with a hardware read/write breakpoint and counts every access, without changing
   * a byte of the process. {@code site} is the whole site as the user wrote it, scheme
   * included; empty when it is not in this runtime's syntax or this instance's VM is not the
   * one it names. Reading the runtime's state to resolve it must be bounded like a walk.
   *
   * @throws WatchPointException when the site is this runtime's but names nothing watchable;
   *     its message is the user's one line
   * @since 1.7
   */
  default Optional<WatchPoint> watchPoint(String site) throws WatchPointException {
    return Optional.empty();
  }

  /** The process mapped or unmapped memory; refresh anything derived from the memory map. */
  default void mappingsChanged(ProcessContext process) {}

  /**
   * Values this instance has confirmed against the live process so far (provenance
   * {@link Provenance#RUNTIME_VALIDATION}), for {@code inspect}; empty until a walk found them.
   */
  default List<DiscoveredOffset> validatedOffsets() {
    return List.of();
  }

  /** Counters since the last call (e.g. {@code bad_frame_link: 3}), then reset to zero. */
  default Map<String, Long> getAndResetCounters() {
    return Map.of();
  }

  /** The host detaches from the process; release caches and anything else held. */
  default void detach() {}
}
