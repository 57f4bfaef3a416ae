package dev.polystack.host.cli;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import sun.misc.Signal;

/**
 * Turns SIGINT, SIGTERM and SIGHUP into a stop request instead of an exit, so a run that is
 * interrupted still detaches from its target and writes what it has. Further signals are
 * ignored until {@link #close} (after the session has disarmed and detached everything), with
 * one line saying why: the JVM's default exit at that moment would kill polystack while a
 * {@code vdso --backend ptrace} target is armed, and that target then dies of SIGTRAP
 * (docs/reliability.md, "Root safety"). Only SIGKILL ends polystack sooner.
 */
final class StopSignals implements AutoCloseable {
  private static final String[] NAMES = {"INT", "TERM", "HUP"};

  private final AtomicReference<String> received = new AtomicReference<>();
  private final AtomicBoolean told = new AtomicBoolean();
  private final sun.misc.SignalHandler[] previous = new sun.misc.SignalHandler[NAMES.length];

  StopSignals(Console console) {
    for (int i = 0; i < NAMES.length; i++) {
      previous[i] = Signal.handle(new Signal(NAMES[i]), s -> {
        if (!received.compareAndSet(null, "SIG" + s.getName())
            && told.compareAndSet(false, true)) {
          console.note("detaching, please wait");
        }
      });
    }
  }

  boolean stopRequested() {
    return received.get() != null;
  }

  /** The first signal received, e.g. {@code SIGINT}, or null. */
  String signal() {
    return received.get();
  }

  /** Gives the signals back to the JVM: call once the target is released. */
  @Override
  public void close() {
    for (int i = 0; i < NAMES.length; i++) {
      Signal.handle(new Signal(NAMES[i]), previous[i]);
    }
  }
}
