package dev.polystack.plugin.api;

import java.util.Map;
import java.util.function.Consumer;

/**
 * Receives the hits of one probe plan and emits a call record per completed call. Called from
 * one host thread at a time.
 *
 * @since 1.0
 */
public interface ProbeMonitor {

  /** Consumes a hit; emits zero or more completed calls to {@code completed}. */
  void onHit(ProbeHit hit, Consumer<CallRecord> completed);

  /** A thread exited: drop its pending entries (counted as unfinished). */
  default void threadExited(int tid) {}

  /** Counters since the last call, then reset. */
  default Map<String, Long> getAndResetCounters() {
    return Map.of();
  }
}
