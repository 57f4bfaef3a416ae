package dev.polystack.host.testutil;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A real process blocked opening a FIFO for writing ({@code sh -c 'echo woken > FIFO'}): any
 * open of the FIFO for reading, even non-blocking, completes its open and lets it exit. Shows
 * whether code under test opened the FIFO.
 */
public final class BlockedWriter implements AutoCloseable {
  private static final String SYS_OPENAT = "257";

  private final Process process;

  private BlockedWriter(Process process) {
    this.process = process;
  }

  /** Creates the FIFO at {@code fifo} and starts a writer; returns once it blocks in open. */
  public static BlockedWriter on(Path fifo) throws Exception {
    Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
    if (mkfifo.waitFor() != 0) {
      throw new IllegalStateException("mkfifo " + fifo + " failed");
    }
    Process p = new ProcessBuilder("sh", "-c", "echo woken > \"$1\"", "sh", fifo.toString())
        .redirectErrorStream(true).start();
    BlockedWriter w = new BlockedWriter(p);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!w.inOpen()) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        w.close();
        throw new IllegalStateException("the writer never blocked opening " + fifo);
      }
      Thread.sleep(5);
    }
    return w;
  }

  /** True while the writer still sits in openat(2) (/proc/PID/syscall, readable as root). */
  private boolean inOpen() {
    try {
      String s = Files.readString(Path.of("/proc/" + process.pid() + "/syscall")).trim();
      return s.startsWith(SYS_OPENAT + " ");
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * True when, {@code settleMillis} after the code under test returned, the writer is still
   * blocked: nothing opened the FIFO (an open wakes it within microseconds).
   */
  public boolean stillBlockedAfter(long settleMillis) throws InterruptedException {
    process.waitFor(settleMillis, TimeUnit.MILLISECONDS);
    return process.isAlive() && inOpen();
  }

  /** Opens the FIFO for reading, as a control: the writer must wake and finish. */
  public String wakeBy(Path fifo) throws Exception {
    String got = Files.readString(fifo).trim();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the writer did not finish after the FIFO was opened");
    }
    return got;
  }

  @Override
  public void close() {
    process.destroy();
  }
}
