package dev.polystack.host.ptrace;

import jnr.ffi.Pointer;

/**
 * The fields of {@code siginfo_t} a tracer usually needs. {@code pid}/{@code uid} and {@code addr}
 * overlay the same union at offset 16: use {@link #pid()} for signals sent by a process
 * (kill/tgkill, SIGCHLD) and {@link #addr()} for faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP).
 */
public record SigInfo(int signo, int errno, int code, int pid, int uid, long addr) {

  static final int SIZE = 128;

  static SigInfo read(Pointer p) {
    return new SigInfo(
        p.getInt(0), p.getInt(4), p.getInt(8), p.getInt(16), p.getInt(20), p.getLong(16));
  }

  /** si_code &lt;= 0 means the signal came from user space (kill, tgkill, sigqueue). */
  public boolean sentByProcess() {
    return code <= 0;
  }
}
