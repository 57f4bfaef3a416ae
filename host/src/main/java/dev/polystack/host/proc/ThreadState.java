package dev.polystack.host.proc;

import java.util.Optional;

/** Scheduler state letter from stat/status; includes letters only older kernels print. */
public enum ThreadState {
  /** Running or runnable (on a CPU or in a run queue). */
  RUNNING('R'),
  SLEEPING('S'),
  /** Uninterruptible sleep, usually I/O. */
  DISK_SLEEP('D'),
  STOPPED('T'),
  TRACING_STOP('t'),
  ZOMBIE('Z'),
  DEAD('X'),
  /** Dead, as printed by kernels before 3.13 and some 2.6 kernels. */
  DEAD_LEGACY('x'),
  WAKEKILL('K'),
  WAKING('W'),
  PARKED('P'),
  /** Idle kernel thread. */
  IDLE('I');

  private final char code;

  ThreadState(char code) {
    this.code = code;
  }

  public char code() {
    return code;
  }

  /**
   * True for {@code R}. The kernel does not distinguish running from runnable here, so this means
   * "on a CPU or wanting one".
   */
  public boolean isOnCpu() {
    return this == RUNNING;
  }

  /** Stopped by a signal or by a tracer. */
  public boolean isStopped() {
    return this == STOPPED || this == TRACING_STOP;
  }

  public static Optional<ThreadState> fromCode(char code) {
    for (ThreadState s : values()) {
      if (s.code == code) {
        return Optional.of(s);
      }
    }
    return Optional.empty();
  }
}
