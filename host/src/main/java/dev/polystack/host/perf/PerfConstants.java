package dev.polystack.host.perf;

/** Numbers from {@code <linux/perf_event.h>} and {@code <linux/hw_breakpoint.h>}. */
public final class PerfConstants {
  private PerfConstants() {}

  public static final int TYPE_HARDWARE = 0;
  public static final int TYPE_SOFTWARE = 1;
  public static final int TYPE_TRACEPOINT = 2;
  public static final int TYPE_HW_CACHE = 3;
  public static final int TYPE_RAW = 4;
  public static final int TYPE_BREAKPOINT = 5;

  public static final long COUNT_HW_CPU_CYCLES = 0;
  public static final long COUNT_SW_CPU_CLOCK = 0;
  public static final long COUNT_SW_TASK_CLOCK = 1;
  public static final long COUNT_SW_DUMMY = 9;

  public static final long SAMPLE_IP = 1L;
  public static final long SAMPLE_TID = 1L << 1;
  public static final long SAMPLE_TIME = 1L << 2;
  public static final long SAMPLE_ADDR = 1L << 3;
  public static final long SAMPLE_READ = 1L << 4;
  public static final long SAMPLE_CALLCHAIN = 1L << 5;
  public static final long SAMPLE_ID = 1L << 6;
  public static final long SAMPLE_CPU = 1L << 7;
  public static final long SAMPLE_PERIOD = 1L << 8;
  public static final long SAMPLE_STREAM_ID = 1L << 9;
  public static final long SAMPLE_RAW = 1L << 10;
  public static final long SAMPLE_BRANCH_STACK = 1L << 11;
  public static final long SAMPLE_REGS_USER = 1L << 12;
  public static final long SAMPLE_STACK_USER = 1L << 13;
  public static final long SAMPLE_IDENTIFIER = 1L << 16;

  public static final int RECORD_MMAP = 1;
  public static final int RECORD_LOST = 2;
  public static final int RECORD_COMM = 3;
  public static final int RECORD_EXIT = 4;
  public static final int RECORD_THROTTLE = 5;
  public static final int RECORD_UNTHROTTLE = 6;
  public static final int RECORD_FORK = 7;
  public static final int RECORD_READ = 8;
  public static final int RECORD_SAMPLE = 9;
  public static final int RECORD_MMAP2 = 10;

  public static final int HW_BREAKPOINT_R = 1;
  public static final int HW_BREAKPOINT_W = 2;
  public static final int HW_BREAKPOINT_RW = 3;
  public static final int HW_BREAKPOINT_X = 4;

  /** x86-64 perf register indices (asm/perf_regs.h) for sample_regs_user. */
  public static final int REG_AX = 0;
  public static final int REG_BX = 1;
  public static final int REG_CX = 2;
  public static final int REG_DX = 3;
  public static final int REG_SI = 4;
  public static final int REG_DI = 5;
  public static final int REG_BP = 6;
  public static final int REG_SP = 7;
  public static final int REG_IP = 8;
  public static final int REG_FLAGS = 9;
  // 10..15 are CS, SS, DS, ES, FS, GS; x86-64 rejects DS..GS in sample_regs_user.
  public static final int REG_R8 = 16;
  public static final int REG_R9 = 17;
  public static final int REG_R10 = 18;
  public static final int REG_R11 = 19;
  public static final int REG_R12 = 20;
  public static final int REG_R13 = 21;
  public static final int REG_R14 = 22;
  public static final int REG_R15 = 23;

  /** The 17 general registers (AX..IP and R8..R15): everything a CFI unwinder may need. */
  public static final long REGS_GENERAL = 0x1ffL | (0xffL << REG_R8);

  /** clockid for {@link PerfEventAttr.Builder#clockid}: the clock of System.nanoTime(). */
  public static final int CLOCK_MONOTONIC = 1;

  /**
   * Largest sample_stack_user the kernel accepts: the size must fit the 16-bit record size and
   * be a multiple of 8 (perf_copy_attr); at sample time the kernel trims it further so the
   * whole record fits.
   */
  public static final int MAX_STACK_USER = 0xffff & ~7;

  public static final long FLAG_FD_CLOEXEC = 1L << 3;

  // ioctl numbers: _IO('$', n) and _IOW/_IOR('$', n, __u64 *) for x86-64.
  static final long IOC_ENABLE = 0x2400;
  static final long IOC_DISABLE = 0x2401;
  static final long IOC_REFRESH = 0x2402;
  static final long IOC_RESET = 0x2403;
  static final long IOC_ID = 0x80082407L;
  static final long IOC_MODIFY_ATTRIBUTES = 0x4008240bL;
  static final long IOC_SET_OUTPUT = 0x2405;
}
