package dev.polystack.vdso;

/**
 * Names of clock ids as clock_gettime(2) and clock_getres(2) take them, including the dynamic
 * clocks the kernel encodes in negative ids (include/linux/posix-timers_types.h): CPU-time clocks
 * of another process or thread ({@code ~pid << 3 | type}, bit 2 for per-thread) and clocks of an
 * open PTP/posix-clock device ({@code ~fd << 3 | 3}).
 */
final class ClockIds {
  private static final String[] STATIC = {
    "CLOCK_REALTIME", "CLOCK_MONOTONIC", "CLOCK_PROCESS_CPUTIME_ID", "CLOCK_THREAD_CPUTIME_ID",
    "CLOCK_MONOTONIC_RAW", "CLOCK_REALTIME_COARSE", "CLOCK_MONOTONIC_COARSE", "CLOCK_BOOTTIME",
    "CLOCK_REALTIME_ALARM", "CLOCK_BOOTTIME_ALARM", "CLOCK_SGI_CYCLE", "CLOCK_TAI"
  };
  private static final String[] CPU_TYPES = {"PROF", "VIRT", "SCHED", "INVALID"};
  private static final int CLOCKFD = 3;
  private static final int PERTHREAD = 4;

  private ClockIds() {}

  /** The name of {@code id}; an id the kernel does not define is written {@code CLOCK_<id>}. */
  static String name(int id) {
    if (id >= 0) {
      return id < STATIC.length ? STATIC[id] : "CLOCK_" + id;
    }
    int owner = ~(id >> 3);
    if ((id & 7) == CLOCKFD) {
      return "FD_CLOCK(fd=" + owner + ")";
    }
    boolean thread = (id & PERTHREAD) != 0;
    return (thread ? "THREAD_CPUCLOCK(tid=" : "PROCESS_CPUCLOCK(pid=") + owner + ", "
        + CPU_TYPES[id & 3] + ")";
  }
}
