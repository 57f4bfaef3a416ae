package dev.polystack.host.ptrace;

import java.util.Objects;

/** One waitpid report for one traced thread. */
public record TraceEvent(int tid, WaitStatus status) {
  public TraceEvent {
    Objects.requireNonNull(status, "status");
  }
}
