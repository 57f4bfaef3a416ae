package dev.polystack.host.cli;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.Syscalls;
import sun.misc.Signal;

/**
 * Turns SIGINT, SIGTERM and SIGHUP into a stop request instead of an exit, so a run that is
 * interrupted still detaches from its target and writes what it has. Further signals are
 * ignored until {@link #close} (after the session has disarmed and detached everything), with
 * one line saying why: the JVM's default exit at that moment would kill polystack while a
 * {@code vdso --backend ptrace} target is armed, and that target then dies of SIGTRAP
 * (docs/reliability.md, "Root safety"). Only SIGKILL ends polystack sooner.
 *
 * <p>After a stop request they stay ignored past {@code close}: the JVM dispatches signals from
 * its own thread, so one sent together with the first can reach the JVM's default handler after
 * {@code close} and turn a clean stop into exit 130.
 *
 * <p>SIGINT and SIGTERM are handled even when polystack inherited them ignored (a background
 * job of a script starts with SIGINT ignored, and the JVM then installs no handler), as perf
 * and py-spy do: {@code kill -INT} must stop a run. An inherited ignored SIGHUP stays ignored:
 * that is nohup's request.
 */
final class StopSignals implements AutoCloseable {
  private static final String[] NAMES = {"INT", "TERM", "HUP"};

  private final AtomicReference<String> received = new AtomicReference<>();
  private final AtomicBoolean told = new AtomicBoolean();
  private final sun.misc.SignalHandler[] previous = new sun.misc.SignalHandler[NAMES.length];

  StopSignals(Console console) {
    sun.misc.SignalHandler handler = s -> {
      if (!received.compareAndSet(null, "SIG" + s.getName())
          && told.compareAndSet(false, true)) {
        console.note("detaching, please wait");
      }
    };
    for (int i = 0; i < NAMES.length; i++) {
      Signal signal = new Signal(NAMES[i]);
      previous[i] = Signal.handle(signal, handler);
      if (previous[i] == sun.misc.SignalHandler.SIG_IGN && !"HUP".equals(NAMES[i])) {
        try {
          // Between these two calls the signal has its default action: a few microseconds.
          Syscalls.defaultDisposition(signal.getNumber());
          Signal.handle(signal, handler);
        } catch (SyscallException e) {
          console.warn("SIG" + NAMES[i] + " stays ignored as polystack inherited it ("
              + e.getMessage() + "); stop the run with SIGTERM or --duration");
        }
      }
    }
  }

  boolean stopRequested() {
    return received.get() != null;
  }

  /** The first signal received, e.g. {@code SIGINT}, or null. */
  String signal() {
    return received.get();
  }

  /**
   * Gives the signals back to the JVM, so that a signal while the output is written ends
   * polystack: call once the target is released. After a stop request they stay with the stop.
   */
  @Override
  public void close() {
    if (stopRequested()) {
      return;
    }
    for (int i = 0; i < NAMES.length; i++) {
      Signal.handle(new Signal(NAMES[i]), previous[i]);
    }
  }
}
