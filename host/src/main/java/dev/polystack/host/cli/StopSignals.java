package dev.polystack.host.cli;

import java.util.concurrent.atomic.AtomicReference;
import sun.misc.Signal;

/**
 * Turns SIGINT, SIGTERM and SIGHUP into a stop request instead of an exit, so a run that is
 * interrupted still detaches from its target and writes what it has. A second signal while the
 * first is being handled falls back to the JVM's default (exit), for a user who insists.
 */
final class StopSignals implements AutoCloseable {
  private static final String[] NAMES = {"INT", "TERM", "HUP"};

  private final AtomicReference<String> received = new AtomicReference<>();
  private final sun.misc.SignalHandler[] previous = new sun.misc.SignalHandler[NAMES.length];

  StopSignals() {
    for (int i = 0; i < NAMES.length; i++) {
      int index = i;
      previous[i] = Signal.handle(new Signal(NAMES[i]), s -> {
        if (!received.compareAndSet(null, "SIG" + s.getName())) {
          previous[index].handle(s);
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

  @Override
  public void close() {
    for (int i = 0; i < NAMES.length; i++) {
      Signal.handle(new Signal(NAMES[i]), previous[i]);
    }
  }
}
