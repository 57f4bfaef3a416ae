package dev.polystack.host.cli;

import dev.polystack.host.sys.LibC;
import dev.polystack.host.sys.Native;
import java.util.concurrent.atomic.AtomicBoolean;
import jnr.ffi.Pointer;

/**
 * {@code top}'s keys on a terminal, as py-spy's and top(1)'s: {@code q} ends the run (as Ctrl-C
 * does). The terminal on stdin is put in non-canonical mode without echo, so a key counts
 * without Enter, and restored at {@link #close} or, should the JVM end another way, by a
 * shutdown hook. Only in the terminal's foreground process group: a background top must not
 * read the terminal (SIGTTIN would stop it). Ctrl-C still sends SIGINT (ISIG stays on).
 */
final class TopKeys implements AutoCloseable {
  /** struct termios on x86-64 glibc: four tcflag_t, c_line, c_cc[32], two speed_t. */
  private static final int TERMIOS_BYTES = 60;
  private static final int C_LFLAG = 12;
  private static final int C_CC = 17;
  private static final int VTIME = 5;
  private static final int VMIN = 6;
  private static final int ICANON = 0x2;
  private static final int ECHO = 0x8;
  private static final int TCSANOW = 0;
  private static final short POLLIN = 0x1;
  /** How often the reader looks whether the run ended (poll's timeout). */
  private static final int POLL_MILLIS = 100;

  private final AtomicBoolean quit = new AtomicBoolean();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Pointer saved;
  private final Thread restoreAtExit;

  private TopKeys(Pointer saved) {
    this.saved = saved;
    this.restoreAtExit = new Thread(this::restore, "polystack-top-keys-restore");
  }

  /** Listens for keys when stdin is the terminal top runs in the foreground of; else inert. */
  static TopKeys start() {
    Pointer saved = null;
    try {
      LibC libc = Native.libc();
      if (libc.isatty(0) == 1 && libc.tcgetpgrp(0) == libc.getpgrp()) {
        Pointer termios = Native.allocate(TERMIOS_BYTES);
        if (libc.tcgetattr(0, termios) == 0) {
          saved = Native.allocate(TERMIOS_BYTES);
          byte[] copy = new byte[TERMIOS_BYTES];
          termios.get(0, copy, 0, TERMIOS_BYTES);
          saved.put(0, copy, 0, TERMIOS_BYTES);
          termios.putInt(C_LFLAG, termios.getInt(C_LFLAG) & ~(ICANON | ECHO));
          termios.putByte(C_CC + VMIN, (byte) 1);
          termios.putByte(C_CC + VTIME, (byte) 0);
          if (libc.tcsetattr(0, TCSANOW, termios) != 0) {
            saved = null;
          }
        }
      }
    } catch (RuntimeException | LinkageError e) {
      saved = null; // no terminal control here: top works without keys
    }
    TopKeys keys = new TopKeys(saved);
    if (saved != null) {
      Runtime.getRuntime().addShutdownHook(keys.restoreAtExit);
      Thread reader = new Thread(keys::read, "polystack-top-keys");
      reader.setDaemon(true);
      reader.start();
    }
    return keys;
  }

  /** Whether the user pressed q. */
  boolean quitRequested() {
    return quit.get();
  }

  /** Whether keys are read (stdin is top's terminal). */
  boolean listening() {
    return saved != null;
  }

  private void read() {
    LibC libc = Native.libc();
    Pointer fds = Native.allocate(8);
    Pointer key = Native.allocate(1);
    while (!closed.get()) {
      fds.putInt(0, 0);
      fds.putShort(4, POLLIN);
      fds.putShort(6, (short) 0);
      int ready = libc.poll(fds, 1, POLL_MILLIS);
      if (ready < 0 && Native.errno() != 4 /* EINTR */) {
        return;
      }
      if (ready <= 0 || closed.get()) {
        continue;
      }
      if (libc.read(0, key, 1) != 1) {
        return; // end of input or an error: no more keys
      }
      byte b = key.getByte(0);
      if (b == 'q' || b == 'Q') {
        quit.set(true);
        return;
      }
    }
  }

  /** Restores the terminal; the reader stops within {@value #POLL_MILLIS} ms. */
  @Override
  public void close() {
    if (saved == null) {
      return;
    }
    restore();
    try {
      Runtime.getRuntime().removeShutdownHook(restoreAtExit);
    } catch (IllegalStateException e) {
      // the JVM is shutting down: the hook runs and finds the terminal restored
    }
  }

  private void restore() {
    if (closed.compareAndSet(false, true)) {
      Native.libc().tcsetattr(0, TCSANOW, saved);
    }
  }
}
