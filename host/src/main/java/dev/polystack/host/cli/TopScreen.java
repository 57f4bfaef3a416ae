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
  /** ioctl request for the terminal's size (asm-generic/ioctls.h). */
  private static final long TIOCGWINSZ = 0x5413;

  private final Console console;
  private final boolean terminal;
  private final AtomicBoolean entered = new AtomicBoolean();
  private boolean hooked;
  private boolean closed;
  private final Thread restoreAtExit;
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
   * Shows one table: {@code header} lines, then as many lines of {@code table} as the terminal
   * has rows for.
   */
  synchronized void show(String header, String table) {
    if (closed) {
      return; // a late interval after the end: the final table follows
    }
    if (!terminal) {
      console.screen("", (first ? "" : "\n") + header + table);
      first = false;
      return;
    }
    if (entered.compareAndSet(false, true)) {
      if (!hooked) {
        Runtime.getRuntime().addShutdownHook(restoreAtExit);
        hooked = true;
      }
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

  /** Leaves the alternate screen, if it was entered; the final table then goes below. */
  @Override
  public synchronized void close() {
    closed = true;
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
