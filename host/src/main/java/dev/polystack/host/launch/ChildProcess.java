package dev.polystack.host.launch;

import dev.polystack.host.ptrace.PtraceConstants;
import dev.polystack.host.ptrace.TraceEvent;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.SyscallException.Area;
import dev.polystack.host.sys.Syscalls;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * A child started by {@link Launcher}. Its exit status is collected with a plain waitpid on this
 * pid only; while the child is traced, wait reports belong to its {@link Tracer} instead.
 */
public final class ChildProcess implements AutoCloseable {
  private final int pid;
  private final boolean startedStopped;
  private WaitStatus exit;

  ChildProcess(int pid, boolean startedStopped) {
    this.pid = pid;
    this.startedStopped = startedStopped;
  }

  public int pid() {
    return pid;
  }

  /** Exit or kill status if the child has terminated; reaps it. Stop reports are skipped. */
  public synchronized Optional<WaitStatus> poll() throws SyscallException {
    if (exit != null) {
      return Optional.of(exit);
    }
    int[] st = new int[1];
    while (true) {
      int r = Native.libc().waitpid(pid, st, 1 /* WNOHANG */);
      if (r == 0) {
        return Optional.empty();
      }
      if (r < 0) {
        throw new SyscallException("waitpid(" + pid + ")", Native.errno(), Area.SPAWN);
      }
      WaitStatus ws = new WaitStatus(st[0]);
      if (ws.terminated()) {
        exit = ws;
        return Optional.of(ws);
      }
    }
  }

  /** Waits for termination without ever blocking in the kernel past {@code timeout}. */
  public WaitStatus waitFor(Duration timeout) throws SyscallException, TimeoutException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Optional<WaitStatus> ws = poll();
      if (ws.isPresent()) {
        return ws.get();
      }
      if (System.nanoTime() > deadline) {
        throw new TimeoutException("process " + pid + " still running after " + timeout);
      }
      LockSupport.parkNanos(1_000_000);
    }
  }

  public void kill(int signal) throws SyscallException {
    Syscalls.kill(pid, signal);
  }

  /**
   * From the exec stop of {@link #seizeAndRunToExec} (seized with PTRACE_O_TRACESYSGOOD), runs
   * the program to the entry of its first system call {@code number} whose first argument is
   * {@code firstArgument}, where it stays stopped for the tracer. Signals the program gets
   * meanwhile are passed on.
   */
  public void runToSyscall(Tracer tracer, long number, long firstArgument, Duration timeout)
      throws SyscallException, TimeoutException {
    long deadline = System.nanoTime() + timeout.toNanos();
    tracer.syscall(pid, 0);
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new TimeoutException("process " + pid + " made no system call " + number
            + " within " + timeout);
      }
      TraceEvent e = tracer.awaitEvent(pid, Duration.ofNanos(left));
      WaitStatus st = e.status();
      if (st.terminated()) {
        exit = st;
        throw new SyscallException("run of child " + pid + " (" + st + ")", Errno.ECHILD,
            Area.SPAWN);
      }
      if (st.syscallStop()) {
        var regs = tracer.getRegs(pid);
        // At an entry stop the kernel has put -ENOSYS in rax; at an exit, the result.
        if (regs.origRax() == number && regs.rdi() == firstArgument
            && regs.rax() == -Errno.ENOSYS) {
          return;
        }
        tracer.syscall(pid, 0);
        continue;
      }
      int sig = st.signalDeliveryStop() && st.stopSignal() != Syscalls.SIGSTOP
          ? st.stopSignal() : 0;
      tracer.syscall(pid, sig);
    }
  }

  /**
   * For a child started with {@link Launcher#startStopped}: seizes it with {@code options} (which
   * must include {@link PtraceConstants#O_TRACEEXEC}), releases it with SIGCONT and lets it run to
   * the exec of the real program. On return the child is in its PTRACE_EVENT_EXEC stop, before
   * the first instruction of the new program (dynamic loader included).
   */
  public void seizeAndRunToExec(Tracer tracer, int options, Duration timeout)
      throws SyscallException, TimeoutException {
    if (!startedStopped) {
      throw new IllegalStateException("child " + pid + " was not started stopped");
    }
    if ((options & PtraceConstants.O_TRACEEXEC) == 0) {
      throw new IllegalArgumentException("options must include O_TRACEEXEC");
    }
    tracer.seize(pid, options);
    Syscalls.kill(pid, Syscalls.SIGCONT);
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new TimeoutException("no exec of " + pid + " within " + timeout);
      }
      TraceEvent e = tracer.awaitEvent(pid, Duration.ofNanos(left));
      WaitStatus st = e.status();
      if (st.terminated()) {
        exit = st;
        throw new SyscallException("exec in child " + pid + " (" + st + ")", Errno.ECHILD, Area.SPAWN);
      }
      if (st.ptraceEvent() == PtraceConstants.EVENT_EXEC) {
        return;
      }
      // Group-stop/notify traps from SIGSTOP/SIGCONT and the SIGCONT delivery itself: pass on.
      int sig = st.signalDeliveryStop() && st.stopSignal() != Syscalls.SIGSTOP ? st.stopSignal() : 0;
      tracer.cont(pid, sig);
    }
  }

  /**
   * How a launched child ended when its session did.
   *
   * @param status its wait status, or null if it could not be collected
   * @param killedByUs it was still running and we killed it (SIGKILL)
   */
  public record Ending(WaitStatus status, boolean killedByUs) {}

  /**
   * How long a launched child has between SIGTERM and SIGKILL at the end of its session: time
   * to flush and remove what it made, as timeout(1)'s --kill-after gives (docs/operations.md,
   * "Launched commands").
   */
  public static final Duration STOP_GRACE = Duration.ofSeconds(2);

  /**
   * Ends a child that must not outlive its session: reaps it if it has exited, else sends it
   * SIGTERM, and SIGKILL if it is still running {@link #STOP_GRACE} later, and reaps it. Never
   * throws. For the summary, which must say which of the two happened.
   */
  public synchronized Ending end() {
    boolean running;
    try {
      running = poll().isEmpty();
    } catch (SyscallException e) {
      return new Ending(null, false); // reaped elsewhere: gone, not by our hand
    }
    if (running) {
      try {
        Syscalls.kill(pid, Syscalls.SIGTERM);
        waitFor(STOP_GRACE);
      } catch (SyscallException | TimeoutException e) {
        // Still running after the grace period, or gone meanwhile: close() decides.
      }
    }
    close();
    try {
      return new Ending(poll().orElse(null), running);
    } catch (SyscallException e) {
      return new Ending(null, running);
    }
  }

  /** Kills (SIGKILL) and reaps the child if it is still around. Never throws. */
  @Override
  public synchronized void close() {
    try {
      if (poll().isPresent()) {
        return;
      }
      Syscalls.kill(pid, Syscalls.SIGKILL);
      waitFor(Duration.ofSeconds(5));
    } catch (SyscallException | TimeoutException e) {
      // ECHILD: reaped by its tracer or already gone; nothing left to clean up.
    }
  }
}
