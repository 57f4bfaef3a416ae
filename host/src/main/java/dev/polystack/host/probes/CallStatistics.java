package dev.polystack.host.probes;

import dev.polystack.plugin.api.CallRecord;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * Statistics of a session on the full population of completed calls, before any filter: per
 * thread, per function and for the session. Per-thread entries outlive their threads.
 */
public final class CallStatistics {
  /** A thread's population, with the process it belonged to. */
  public record ThreadKey(int pid, int tid) implements Comparable<ThreadKey> {
    @Override
    public int compareTo(ThreadKey o) {
      return pid != o.pid ? Integer.compare(pid, o.pid) : Integer.compare(tid, o.tid);
    }
  }

  private final LatencyStats session = new LatencyStats();
  private final Map<ThreadKey, LatencyStats> threads = new TreeMap<>();
  private final Map<String, LatencyStats> functions = new TreeMap<>();

  void add(CallRecord r) {
    long d = r.durationNanos();
    session.add(d, r.errorName());
    threads.computeIfAbsent(new ThreadKey(r.pid(), r.tid()), k -> new LatencyStats())
        .add(d, r.errorName());
    functions.computeIfAbsent(r.function(), k -> new LatencyStats()).add(d, r.errorName());
  }

  void emitted(CallRecord r) {
    session.emitted();
    threads.get(new ThreadKey(r.pid(), r.tid())).emitted();
    functions.get(r.function()).emitted();
  }

  public LatencyStats session() {
    return session;
  }

  public Map<ThreadKey, LatencyStats> threads() {
    return Collections.unmodifiableMap(threads);
  }

  public Map<String, LatencyStats> functions() {
    return Collections.unmodifiableMap(functions);
  }
}
