package dev.polystack.host.sys;

import jnr.ffi.Pointer;

/**
 * Holds back the interval-timer signals (SIGALRM, SIGVTALRM, SIGPROF) on the calling thread
 * while it is open. A long system call that gives up when a signal is pending, such as the BPF
 * verifier's (EAGAIN), then completes although a sampling profiler in the same JVM sends such a
 * signal every millisecond; held signals are delivered when it closes.
 */
public final class TimerSignalsHeld implements AutoCloseable {
  private static final int SIG_BLOCK = 0;
  private static final int SIG_SETMASK = 2;
  private static final int SIGALRM = 14;
  private static final int SIGVTALRM = 26;
  private static final int SIGPROF = 27;
  private static final int SIGSET_BYTES = 128;

  private final Pointer previous;
  private boolean closed;

  private TimerSignalsHeld(Pointer previous) {
    this.previous = previous;
  }

  /** Holds them until {@link #close()}, which must run on the same thread. */
  public static TimerSignalsHeld hold() {
    LibC c = Native.libc();
    Pointer set = Native.allocate(SIGSET_BYTES);
    Pointer previous = Native.allocate(SIGSET_BYTES);
    c.sigemptyset(set);
    c.sigaddset(set, SIGALRM);
    c.sigaddset(set, SIGVTALRM);
    c.sigaddset(set, SIGPROF);
    // On failure nothing was changed: the call then runs as before, with the signals.
    return new TimerSignalsHeld(c.pthread_sigmask(SIG_BLOCK, set, previous) == 0 ? previous : null);
  }

  @Override
  public void close() {
    if (!closed && previous != null) {
      Native.libc().pthread_sigmask(SIG_SETMASK, previous, null);
    }
    closed = true;
  }
}
