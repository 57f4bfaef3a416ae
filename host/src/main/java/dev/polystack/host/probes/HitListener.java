package dev.polystack.host.probes;

import dev.polystack.otel.counters.Counter;
import dev.polystack.plugin.api.ProbeHit;

/** Where a probe backend delivers what it sees. Called from the backend's one thread. */
public interface HitListener {
  /**
   * A hit. When it carries memory the thread is still stopped and reads are consistent; the
   * ptrace backend delivers return hits so, and entry hits (registers and the return address
   * word) after the thread resumed, without memory.
   */
  void hit(ProbeHit hit);

  /** The backend resumed the target after a batch of hits: a good time for slow work (I/O). */
  default void afterResume() {}

  /** A thread exited or exec'd away: its pending calls will not complete. */
  void threadExited(int tid);

  /** A process (the target or, with forks followed, a child) got a new image through exec. */
  default void planChanged(ResolvedPlan plan) {}

  /** Something was lost or refused, by reason (e.g. ring_lost, return_slot_retargeted). */
  void count(String reason, long n);

  /** Counts {@code n} for a declared reason ({@code TraceCounters}). */
  default void count(Counter reason, long n) {
    count(reason.name(), n);
  }
}
