package dev.polystack.host.ptrace;

/** Request, option and event numbers from {@code <linux/ptrace.h>} (x86-64). */
public final class PtraceConstants {
  private PtraceConstants() {}

  static final int PEEKDATA = 2;
  static final int PEEKUSER = 3;
  static final int POKEUSER = 6;
  static final int CONT = 7;
  static final int GETREGS = 12;
  static final int SYSCALL = 24;
  static final int DETACH = 17;
  static final int GETEVENTMSG = 0x4201;
  static final int GETSIGINFO = 0x4202;
  static final int SEIZE = 0x4206;
  static final int INTERRUPT = 0x4207;
  static final int LISTEN = 0x4208;

  public static final int O_TRACESYSGOOD = 0x1;
  public static final int O_TRACEFORK = 0x2;
  public static final int O_TRACEVFORK = 0x4;
  public static final int O_TRACECLONE = 0x8;
  public static final int O_TRACEEXEC = 0x10;
  public static final int O_TRACEVFORKDONE = 0x20;
  public static final int O_TRACEEXIT = 0x40;
  /** Kills the tracee if the tracer exits. Deliberately not part of {@link #DEFAULT_OPTIONS}. */
  public static final int O_EXITKILL = 0x100000;

  /** Follow every thread and child; a profiler host must never take the target down with it. */
  public static final int DEFAULT_OPTIONS =
      O_TRACECLONE | O_TRACEEXEC | O_TRACEFORK | O_TRACEVFORK | O_TRACEEXIT;

  public static final int EVENT_FORK = 1;
  public static final int EVENT_VFORK = 2;
  public static final int EVENT_CLONE = 3;
  public static final int EVENT_EXEC = 4;
  public static final int EVENT_VFORK_DONE = 5;
  public static final int EVENT_EXIT = 6;
  public static final int EVENT_STOP = 128;

  /** offsetof(struct user, u_debugreg) on x86-64. */
  public static final int USER_DEBUGREG_OFFSET = 848;

  static final int WNOHANG = 1;
  static final int WALL = 0x40000000;
  static final int WNOTHREAD = 0x20000000;

  /** PEEKUSER/POKEUSER offset of debug register DR{@code index} (0..7). */
  public static long debugRegisterOffset(int index) {
    if (index < 0 || index > 7) {
      throw new IllegalArgumentException("debug register index must be 0..7: " + index);
    }
    return USER_DEBUGREG_OFFSET + 8L * index;
  }
}
