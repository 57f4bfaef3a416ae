package dev.polystack.host.pipeline;

import dev.polystack.host.bpf.AllocRecord;
import dev.polystack.host.bpf.AllocationProbes;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.ProcessEvent;
import java.util.Map;
import java.util.Optional;

/**
 * A capture backend, after async-profiler's Engine: asked whether it can run here, started,
 * polled for what it captured, stopped. Everything it holds in the kernel is owned by file
 * descriptors of this process, so a polystack that dies leaves nothing behind.
 */
public interface CaptureEngine extends AutoCloseable {

  /** Receives what the engine captured, on the polling thread. */
  interface Listener {
    void tick(CaptureRecord record);

    void event(ProcessEvent event);

    /** A sampled allocation or the free of a sampled block (an engine of allocations). */
    default void allocation(AllocRecord record) {}

    /** The stack of sampled allocations, sent once per {@code digest} (0: the next one's). */
    default void allocationStack(long digest, CaptureRecord record) {}

    /** A record that did not parse: counted, never read past. */
    void malformed();

    /**
     * Process {@code pid} ran a new program at {@code monotonicNanos}: said before the records
     * of the batch that holds that exec are handed over, so that the ticks before it are not
     * walked on the new program's memory.
     */
    default void imageReplaced(int pid, long monotonicNanos) {}
  }

  /** The engine's name as the CLI says it ({@code bpf}). */
  String name();

  /** Why the engine cannot run on this machine, in one line with what to do; empty if it can. */
  Optional<String> check();

  /** Starts capturing; {@link EngineException} says why it could not. */
  void start() throws EngineException;

  /** Hands what is ready to {@code listener}, first waiting up to {@code timeoutMillis}. */
  void poll(int timeoutMillis, Listener listener);

  /**
   * Selects one more process (selection modes; host-wide engines select every process); before
   * {@link #start}, it is captured from the start.
   */
  void select(int pid, boolean followChildren);

  /**
   * Whether the engine itself picks the processes it captures (host-wide, or a cgroup checked at
   * each tick): then {@link #select} is not how a process joins.
   */
  default boolean selectsInKernel() {
    return false;
  }

  /**
   * Whether the engine wakes the reader at the first tick of each new program, so that a
   * program is described while it runs without polling soon after every exec.
   */
  default boolean wakesAtFirstTick() {
    return false;
  }

  /** The allocation probes, when the engine samples allocations instead of CPU ticks. */
  default Optional<AllocationProbes> allocations() {
    return Optional.empty();
  }

  /** Stops selecting a process and drops its capture plans. */
  void deselect(int pid);

  /** Installs the capture plans of a process. */
  dev.polystack.host.sampling.nostop.ProcessTicks.PlanSlots planSlots();

  /** The engine's own counters, cumulative since start, by lower_snake name. */
  Map<String, Long> counters();

  /** Stops capturing and frees everything. Idempotent. */
  @Override
  void close();

  /** An engine that could not start. */
  final class EngineException extends Exception {
    public EngineException(String message) {
      super(message);
    }
  }
}
