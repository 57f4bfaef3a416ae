package dev.polystack.host.cli;

import dev.polystack.host.sys.Native;
import java.util.concurrent.atomic.AtomicBoolean;
import jnr.ffi.Pointer;

/**
 * Where {@code top}'s tables go. On a terminal: the terminal's alternate screen, redrawn in
 * place and cut to its size, with the cursor hidden; {@link #close} gives the user's screen and
 * cursor back, and so does a shutdown hook should the JVM end another way. Elsewhere (a pipe, a
 * file): each table printed after the previous one as plain text, no control sequence at all.
 */
final class TopScreen implements AutoCloseable {
  private static final String ENTER = "\033[?1049h\033[?25l";
  private static final String LEAVE = "\033[?25h\033[?1049l";
  private static final String HOME_AND_CLEAR = "\033[H\033[2J";
  /** How long {@link #close} waits for a draw under way (a stalled terminal or pipe). */
  private static final long PAINTER_JOIN_MILLIS = 2000;
  /** ioctl request for the terminal's size (asm-generic/ioctls.h). */
  private static final long TIOCGWINSZ = 0x5413;

  private final Console console;
  private final boolean terminal;
  private final AtomicBoolean entered = new AtomicBoolean();
  private final Thread restoreAtExit;
  private final Object slot = new Object();
  /** The latest table not drawn yet (header, table), or null; guarded by {@link #slot}. */
  private String[] pending;
  private boolean closed;
  private Thread painter;
  /** Guarded by this: the painter's draws, and leaving the screen. */
  private boolean hooked;
  private boolean left;
  private boolean first = true;

  TopScreen(Console console, boolean terminal) {
    this.console = console;
    this.terminal = terminal;
    this.restoreAtExit = new Thread(this::leave, "polystack-top-restore");
  }

  /** Whether stdout is a terminal (else tables are printed plain). */
  static boolean stdoutIsTerminal() {
    try {
      return Native.libc().isatty(1) == 1;
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  boolean terminal() {
    return terminal;
  }

  /**
   * Shows one table: {@code header} lines, then {@code table}. Returns at once: a thread of its
   * own draws the latest table given, so a slow terminal or pipe reader never holds up the
   * sampling run's helper thread (which calls this); a reader slower than the interval sees the
   * latest table, not every one.
   */
  void show(String header, String table) {
    synchronized (slot) {
      if (closed) {
        return; // a late interval after the end: the final table follows
      }
      pending = new String[] {header, table};
      if (painter == null) {
        painter = new Thread(this::paint, "polystack-top-screen");
        painter.setDaemon(true);
        painter.start();
      }
      slot.notifyAll();
    }
  }

  private void paint() {
    while (true) {
      String[] next;
      synchronized (slot) {
        while (pending == null && !closed) {
          try {
            slot.wait();
          } catch (InterruptedException e) {
            return;
          }
        }
        if (closed) {
          return;
        }
        next = pending;
        pending = null;
      }
      draw(next[0], next[1]);
    }
  }

  private synchronized void draw(String header, String table) {
    if (left) {
      return;
    }
    if (!terminal) {
      console.screen("", (first ? "" : "\n") + header + table);
      first = false;
      return;
    }
    if (entered.compareAndSet(false, true)) {
      Runtime.getRuntime().addShutdownHook(restoreAtExit);
      hooked = true;
      console.screen(ENTER, "");
    }
    console.screen(HOME_AND_CLEAR, header + table);
  }

  /** Rows of table that fit under {@code headerLines} on the terminal; {@code plain} if none. */
  int rowsFor(int headerLines, int plain) {
    int[] size = terminal ? size() : null;
    return size == null ? plain : Math.max(1, size[0] - headerLines - 2);
  }

  /** The terminal's width, 0 (do not cut) when not a terminal or unknown. */
  int width() {
    int[] size = terminal ? size() : null;
    return size == null ? 0 : size[1];
  }

  /**
   * Stops drawing and leaves the alternate screen, if it was entered; the final table then goes
   * on the user's screen. Waits for a draw under way, so none comes after.
   */
  @Override
  public void close() {
    Thread p;
    synchronized (slot) {
      closed = true;
      pending = null;
      p = painter;
      slot.notifyAll();
    }
    if (p != null) {
      try {
        p.join(PAINTER_JOIN_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    synchronized (this) {
      left = true;
      leave();
      if (hooked) {
        hooked = false;
        try {
          Runtime.getRuntime().removeShutdownHook(restoreAtExit);
        } catch (IllegalStateException e) {
          // the JVM is already shutting down: the hook runs (and finds the screen restored)
        }
      }
    }
  }

  /** Leaves the alternate screen once; also the shutdown hook, so it takes no lock of ours. */
  private void leave() {
    if (entered.compareAndSet(true, false)) {
      console.screen(LEAVE, "");
    }
  }

  /** Rows and columns of the terminal on stdout, or null when they cannot be read. */
  private static int[] size() {
    try {
      Pointer ws = Native.allocate(8);
      if (Native.libc().ioctl(1, TIOCGWINSZ, ws.address()) != 0) {
        return null;
      }
      int rows = ws.getShort(0) & 0xffff;
      int cols = ws.getShort(2) & 0xffff;
      return rows == 0 || cols == 0 ? null : new int[] {rows, cols};
    } catch (RuntimeException | LinkageError e) {
      return null;
    }
  }
}
