package dev.polystack.host.sampling.ptrace;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/**
 * Waits until this JVM's JIT compiler threads have gone quiet, before sampling starts. Start-up
 * leaves the compilers with a few hundred milliseconds of work (polystack's own start-up code, then
 * the sampling path the warm-up just ran); on a machine with few CPUs that work competes with the
 * target for a CPU and with the tracer for the CPU it needs while the target is held. On 2 vCPUs
 * the target lost more time to compiler, sampler and tracer threads at the start of a record than
 * to its stops afterwards (docs/benchmarks.md, "Figures behind the code's choices"). A program that
 * polystack launched is still held at its first instruction while this waits, so none of its run is
 * affected; an attached one merely keeps running unsampled a little longer.
 *
 * <p>The compilers' CPU time comes from {@code /proc/self/task/TID/schedstat}; without it (no
 * schedstats, another JVM's thread names) this returns at once.
 */
final class CompilerSettle {
  /** The compilers count as quiet once they used no CPU for this long. */
  static final long QUIET_NANOS = 30_000_000L;
  /** Never hold the start longer than this. */
  static final long MAX_NANOS = 1_500_000_000L;
  private static final long POLL_NANOS = 5_000_000L;
  private static final Path TASKS = Path.of("/proc/self/task");

  private CompilerSettle() {}

  /**
   * Waits for quiet compilers, at most {@link #MAX_NANOS}, or until {@code stop} (the user's
   * Ctrl-C must not wait for the JIT); returns how long it waited.
   */
  static long await(java.util.function.BooleanSupplier stop) {
    long start = System.nanoTime();
    long last = compilerNanos();
    if (last < 0) {
      return 0;
    }
    long quietSince = start;
    while (true) {
      long now = System.nanoTime();
      if (now - quietSince >= QUIET_NANOS || now - start >= MAX_NANOS || stop.getAsBoolean()) {
        return now - start;
      }
      LockSupport.parkNanos(POLL_NANOS);
      long used = compilerNanos();
      if (used < 0) {
        return System.nanoTime() - start;
      }
      if (used != last) {
        last = used;
        quietSince = System.nanoTime();
      }
    }
  }

  /**
   * CPU time used so far by the compiler threads that exist now (HotSpot names them "C1
   * CompilerThread0", "C2 CompilerThread1", ...), or -1 if it cannot be read. A compiler
   * thread that exits (HotSpot retires idle ones) drops out of the sum, which changes it and so
   * restarts the quiet period once: harmless.
   */
  static long compilerNanos() {
    long sum = 0;
    boolean any = false;
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
      for (Path task : tasks) {
        String comm = readSmall(task.resolve("comm"));
        if (comm == null || !comm.contains("CompilerThre")) {
          continue;
        }
        String stat = readSmall(task.resolve("schedstat"));
        if (stat == null) {
          continue;
        }
        int space = stat.indexOf(' ');
        try {
          sum += Long.parseLong(space < 0 ? stat.trim() : stat.substring(0, space));
          any = true;
        } catch (NumberFormatException e) {
          return -1;
        }
      }
    } catch (IOException | SecurityException e) {
      return -1;
    }
    return any ? sum : -1;
  }

  /** A /proc file of a few dozen bytes, or null if it vanished (the thread exited). */
  private static String readSmall(Path p) {
    try {
      byte[] b = Files.readAllBytes(p);
      return b.length > 256 ? null : new String(b, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      return null;
    }
  }
}
