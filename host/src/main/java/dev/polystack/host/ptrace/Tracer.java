package dev.polystack.host.ptrace;

import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.SyscallException.Area;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The single owner of all ptrace and waitpid traffic for one target process.
 *
 * <p>Linux only accepts ptrace requests from the thread that attached, so every request runs on
 * one dedicated platform thread (a virtual thread could migrate between carriers). Other threads
 * hand work over through a queue and get a {@link CompletableFuture}, or use the blocking
 * convenience methods, which rethrow {@link SyscallException}.
 *
 * <p>{@link #close()} detaches every seized thread, stopping it first where necessary, so the
 * target is never left stopped or killed.
 */
public final class Tracer implements AutoCloseable {
  private static final Runnable POISON = () -> {};
  private static final long DETACH_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(2);

  private final int pid;
  private final Thread thread;
  private final Ptrace ptrace;
  private final LinkedBlockingQueue<Runnable> queue = new LinkedBlockingQueue<>();
  private volatile boolean closed;

  private Tracer(int pid) {
    if (pid <= 0) {
      throw new IllegalArgumentException("pid must be positive: " + pid);
    }
    this.pid = pid;
    this.thread = new Thread(this::loop, "polystack-tracer-" + pid);
    this.thread.setDaemon(true);
    this.ptrace = new Ptrace(thread, pid);
  }

  /** Starts the tracer thread for {@code pid}. Nothing is attached until a seize call. */
  public static Tracer start(int pid) {
    Tracer t = new Tracer(pid);
    t.thread.start();
    return t;
  }

  public int pid() {
    return pid;
  }

  /** Runs {@code task} on the tracer thread. Fails with IllegalStateException once closed. */
  public <T> CompletableFuture<T> submit(PtraceTask<T> task) {
    Objects.requireNonNull(task, "task");
    CompletableFuture<T> f = new CompletableFuture<>();
    if (Thread.currentThread() == thread) {
      // Re-entrant use from inside a task: queueing would deadlock, and we are already on the
      // right thread.
      try {
        f.complete(task.run(ptrace));
      } catch (Throwable t) {
        f.completeExceptionally(t);
      }
      return f;
    }
    if (closed) {
      f.completeExceptionally(new IllegalStateException("tracer for " + pid + " is closed"));
      return f;
    }
    queue.add(
        () -> {
          try {
            f.complete(task.run(ptrace));
          } catch (Throwable t) {
            f.completeExceptionally(t);
          }
        });
    return f;
  }

  /** Blocking {@link #submit}: waits for the result and rethrows the task's SyscallException. */
  public <T> T call(PtraceTask<T> task) throws SyscallException {
    return await(submit(task));
  }

  /** Seizes one thread with {@link PtraceConstants#DEFAULT_OPTIONS}. */
  public void seize(int tid) throws SyscallException {
    seize(tid, PtraceConstants.DEFAULT_OPTIONS);
  }

  public void seize(int tid, int options) throws SyscallException {
    call(p -> {
      p.seize(tid, options);
      return null;
    });
  }

  public Set<Integer> tracedThreads() throws SyscallException {
    return call(Ptrace::tracedThreads);
  }

  public void interrupt(int tid) throws SyscallException {
    call(p -> {
      p.interrupt(tid);
      return null;
    });
  }

  /** Interrupts {@code tid} if needed and waits for its stop; null if it exited or timed out. */
  public WaitStatus stop(int tid, Duration timeout) throws SyscallException {
    return call(p -> p.stop(tid, timeout.toNanos()));
  }

  /** Next report for {@code tid}; reports for other threads seen meanwhile stay queued. */
  public TraceEvent awaitEvent(int tid, Duration timeout) throws SyscallException, TimeoutException {
    TraceEvent e = call(p -> p.awaitEvent(tid, timeout.toNanos()));
    if (e == null) {
      throw new TimeoutException("no wait report for thread " + tid + " within " + timeout);
    }
    return e;
  }

  public TraceEvent awaitAnyEvent(Duration timeout) throws SyscallException, TimeoutException {
    TraceEvent e = call(p -> p.awaitAnyEvent(timeout.toNanos()));
    if (e == null) {
      throw new TimeoutException("no wait report for process " + pid + " within " + timeout);
    }
    return e;
  }

  public void cont(int tid, int signal) throws SyscallException {
    call(p -> {
      p.cont(tid, signal);
      return null;
    });
  }

  /** Resumes {@code tid} until its next system call entry or exit stop. */
  public void syscall(int tid, int signal) throws SyscallException {
    call(p -> {
      p.syscall(tid, signal);
      return null;
    });
  }

  public void listen(int tid) throws SyscallException {
    call(p -> {
      p.listen(tid);
      return null;
    });
  }

  /** Raw DETACH; the thread must be stopped. See {@link #detachSafely}. */
  public void detach(int tid, int signal) throws SyscallException {
    call(p -> {
      p.detach(tid, signal);
      return null;
    });
  }

  /** Stops the thread if necessary, then detaches it so it keeps running. */
  public boolean detachSafely(int tid) throws SyscallException {
    return call(p -> p.detachSafely(tid, DETACH_TIMEOUT_NANOS));
  }

  public UserRegs getRegs(int tid) throws SyscallException {
    return call(p -> p.getRegs(tid));
  }

  public long peekUser(int tid, long offset) throws SyscallException {
    return call(p -> p.peekUser(tid, offset));
  }

  public void pokeUser(int tid, long offset, long value) throws SyscallException {
    call(p -> {
      p.pokeUser(tid, offset, value);
      return null;
    });
  }

  public long peekData(int tid, long address) throws SyscallException {
    return call(p -> p.peekData(tid, address));
  }

  public SigInfo getSigInfo(int tid) throws SyscallException {
    return call(p -> p.getSigInfo(tid));
  }

  public long getEventMsg(int tid) throws SyscallException {
    return call(p -> p.getEventMsg(tid));
  }

  public void tgkill(int tid, int signal) throws SyscallException {
    call(p -> {
      p.tgkill(tid, signal);
      return null;
    });
  }

  /**
   * Detaches every seized thread (stopping each first if needed) and ends the tracer thread.
   * Idempotent. Failures are reported, not thrown: close must always release the target. A
   * thread that cannot be stopped (uninterruptible sleep) cannot be detached; the kernel lets
   * it go when polystack exits, and nothing is left stopped, so one warning line says so.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    CompletableFuture<Void> detached = submit(p -> {
      for (int tid : p.tracedThreads()) {
        try {
          if (!p.detachSafely(tid, DETACH_TIMEOUT_NANOS)) {
            warn("could not detach thread " + tid + " of process " + pid + ": it did not stop"
                + " within " + TimeUnit.NANOSECONDS.toSeconds(DETACH_TIMEOUT_NANOS)
                + " s (uninterruptible sleep?); it is not stopped and the kernel detaches it"
                + " when polystack exits, nothing to do");
          }
        } catch (SyscallException e) {
          warn("could not detach thread " + tid + " of process " + pid + ": "
              + e.getMessage());
        }
      }
      return null;
    });
    closed = true;
    queue.add(POISON);
    try {
      detached.get(30, TimeUnit.SECONDS);
      thread.join(TimeUnit.SECONDS.toMillis(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      warn("closing the tracer of process " + pid + " failed: " + e
          + "; the kernel detaches its threads when polystack exits");
    }
  }

  /**
   * One line on stderr, in the CLI's "polystack: warning:" form (this class has no console:
   * it runs inside every command). Newlines are folded so a message can never span lines.
   */
  private static void warn(String message) {
    System.err.println("polystack: warning: " + message.replace('\r', ' ').replace('\n', ' '));
    System.err.flush();
  }

  private void loop() {
    fineTimerSlack();
    while (true) {
      Runnable r;
      try {
        r = queue.take();
      } catch (InterruptedException e) {
        // Only close() ends this thread; an interrupt from elsewhere must not orphan tracees.
        continue;
      }
      if (r == POISON) {
        return;
      }
      r.run();
    }
  }

  /**
   * This thread waits for a sampled thread's stop by sleeping in steps of 10-100 us (see {@link
   * Ptrace#awaitStop}); Linux rounds a sleep up by the thread's timer slack, 50 us by default,
   * which would add that much to the target's pause per sample. A 1 us slack keeps short sleeps
   * short; it applies to this thread only. Best effort: without it, the sleeps are longer.
   */
  private static void fineTimerSlack() {
    try {
      Native.libc().syscall(SYS_PRCTL, PR_SET_TIMERSLACK, TIMER_SLACK_NANOS, 0, 0, 0, 0);
    } catch (RuntimeException | LinkageError e) {
      // Nothing to tell the user: the only cost is longer sleeps, which the pause figures show.
    }
  }

  private static final long SYS_PRCTL = 157;
  private static final long PR_SET_TIMERSLACK = 29;
  private static final long TIMER_SLACK_NANOS = 1_000;

  private <T> T await(CompletableFuture<T> f) throws SyscallException {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SyscallException("tracer call for " + pid, Errno.EINTR, Area.PTRACE);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof SyscallException) {
        // Re-wrap is unnecessary; the original carries call, errno and advice.
        throw (SyscallException) c;
      }
      if (c instanceof RuntimeException) {
        throw (RuntimeException) c;
      }
      if (c instanceof Error) {
        throw (Error) c;
      }
      throw new IllegalStateException(c);
    }
  }
}
