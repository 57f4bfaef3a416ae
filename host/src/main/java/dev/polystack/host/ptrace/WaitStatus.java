package dev.polystack.host.ptrace;

import dev.polystack.host.sys.Syscalls;

/**
 * A decoded {@code waitpid} status word. Decoding follows the glibc {@code W*} macros; for
 * ptrace stops the event number lives in bits 16..23 ({@code status >> 16}).
 */
public record WaitStatus(int raw) {

  public boolean exited() {
    return (raw & 0x7f) == 0;
  }

  /** Exit code; only meaningful when {@link #exited()}. */
  public int exitCode() {
    return (raw >> 8) & 0xff;
  }

  /** Terminated by a signal (WIFSIGNALED). */
  public boolean killed() {
    int low = raw & 0x7f;
    return low != 0 && low != 0x7f;
  }

  public int termSignal() {
    return raw & 0x7f;
  }

  public boolean coreDumped() {
    return killed() && (raw & 0x80) != 0;
  }

  public boolean stopped() {
    return (raw & 0xff) == 0x7f;
  }

  /** Signal that caused the stop; only meaningful when {@link #stopped()}. */
  public int stopSignal() {
    return (raw >> 8) & 0xff;
  }

  /** PTRACE_EVENT_* number of a ptrace event stop, 0 for signal-delivery stops. */
  public int ptraceEvent() {
    return stopped() ? (raw >>> 16) & 0xff : 0;
  }

  public boolean continued() {
    return raw == 0xffff;
  }

  /** True for the group-stop a seized tracee reports for SIGSTOP/SIGTSTP/SIGTTIN/SIGTTOU. */
  public boolean groupStop() {
    if (!stopped() || ptraceEvent() != PtraceConstants.EVENT_STOP) {
      return false;
    }
    int sig = stopSignal();
    return sig == Syscalls.SIGSTOP
        || sig == Syscalls.SIGTSTP
        || sig == Syscalls.SIGTTIN
        || sig == Syscalls.SIGTTOU;
  }

  /**
   * True for a signal-delivery stop: the signal is pending delivery and is lost unless passed
   * back on CONT/DETACH.
   */
  public boolean signalDeliveryStop() {
    return stopped() && ptraceEvent() == 0;
  }

  /** A system call entry or exit stop of a tracee seized with PTRACE_O_TRACESYSGOOD. */
  public boolean syscallStop() {
    return stopped() && ptraceEvent() == 0 && stopSignal() == (Syscalls.SIGTRAP | 0x80);
  }

  /** Exited or killed: the thread is gone and will report nothing more. */
  public boolean terminated() {
    return exited() || killed();
  }

  @Override
  public String toString() {
    if (exited()) {
      return "exited(" + exitCode() + ")";
    }
    if (killed()) {
      return "killed(signal " + termSignal() + (coreDumped() ? ", core" : "") + ")";
    }
    if (stopped()) {
      String kind = groupStop() ? "group-stop" : ptraceEvent() != 0 ? "event " + ptraceEvent() : "signal-delivery";
      return "stopped(signal " + stopSignal() + ", " + kind + ")";
    }
    if (continued()) {
      return "continued";
    }
    return "status(0x" + Integer.toHexString(raw) + ")";
  }
}
