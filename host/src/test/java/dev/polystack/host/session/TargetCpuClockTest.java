package dev.polystack.host.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.proc.ProcFs;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The on-CPU clock against this JVM's own threads, whose CPU time the JVM also reports. */
class TargetCpuClockTest {
  private static volatile double sink;

  /** Burns {@code nanos} of this thread's CPU time (its own clock, not the wall's). */
  private static void burn(long nanos) {
    var bean = ManagementFactory.getThreadMXBean();
    long end = bean.getCurrentThreadCpuTime() + nanos;
    while (bean.getCurrentThreadCpuTime() < end) {
      for (int i = 0; i < 10_000; i++) {
        sink += i * 0.5;
      }
    }
  }

  private static int ownTid() throws Exception {
    // /proc/thread-self -> PID/task/TID
    return Integer.parseInt(Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName()
        .toString());
  }

  @Test
  void countsTheThreadsCpuTimeAndTheSamplesTakenMeanwhile() throws Exception {
    int pid = (int) ProcessHandle.current().pid();
    int tid = ownTid();
    AtomicLong samples = new AtomicLong();
    var bean = ManagementFactory.getThreadMXBean();
    TargetCpuClock one = new TargetCpuClock(ProcFs.system(), pid, Set.of(tid), samples::get);
    TargetCpuClock all = new TargetCpuClock(ProcFs.system(), pid, Set.of(), samples::get);
    long before = bean.getCurrentThreadCpuTime();
    one.read(true);
    all.read(true);
    samples.addAndGet(7);
    burn(60_000_000L);
    one.read(true);
    all.read(true);
    long used = bean.getCurrentThreadCpuTime() - before;

    Map<String, Long> thread = one.counters();
    assertEquals(7L, thread.get("target_cpu_samples"));
    long ns = thread.get("target_cpu_ns");
    // schedstat and the JVM's thread clock are the same kernel count, read at other moments.
    assertTrue(ns >= 55_000_000L && ns <= used, ns + " ns read, " + used + " ns used");
    // Every thread's time includes this one's (55 ms or more), within two 10 ms ticks: a JVM
    // thread that exits between the readings takes its schedstat time out of the live sum, and
    // the process's utime+stime, which keeps it, counts whole ticks.
    long every = all.counters().get("target_cpu_ns");
    assertTrue(every >= ns - 20_000_000L, every + " ns for every thread, " + ns + " for this one");
  }

  @Test
  void aProcessGoneBeforeItsFirstReadingLeavesNoFigure() throws Exception {
    AtomicLong samples = new AtomicLong();
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    TargetCpuClock none = new TargetCpuClock(ProcFs.system(), (int) gone.pid(), Set.of(),
        samples::get);
    none.read(true);
    assertEquals(Map.of(), none.counters());
  }
}
