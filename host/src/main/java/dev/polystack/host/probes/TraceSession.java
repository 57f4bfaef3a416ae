package dev.polystack.host.probes;

import dev.polystack.host.bpf.VdsoTrace;
import dev.polystack.host.sampling.TargetExit;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.ptrace.TraceeControl;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.MonotonicClock;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.counters.TraceCounters;
import dev.polystack.plugin.api.CallRecord;
import dev.polystack.plugin.api.ProbeHit;
import dev.polystack.plugin.api.ProbeMonitor;
import dev.polystack.plugin.api.ProbePlugin;
import dev.polystack.plugin.api.ProbeRequest;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * One {@code polystack vdso} session: resolve the vDSO, plan, arm with the chosen backend, turn
 * hits into calls through the plug-in's monitor, count every call (sequence numbers and
 * statistics on the full population), then filter what is emitted. Always leaves the target
 * running and unarmed; a launched target that outlives the session is ended, as in record.
 */
public final class TraceSession {
  /** x86-64 has four debug registers per thread. */
  public static final int SLOTS = 4;

  /** The probe backends (docs/vdso.md says which to pick for what). */
  public enum Backend {
    /** Breakpoints with a BPF handler that pairs in the kernel; never stops the target. */
    BPF,
    /** Breakpoints that stop the thread under ptrace; exact, a stop per hit. */
    PTRACE,
    /** Breakpoints sampled into perf rings; never stops the target; loses calls (counted). */
    PERF
  }

  /** What the user asked for. */
  public record Options(List<String> functions, Backend backend, Set<Integer> tids,
      boolean errorsOnly, long minDurationNanos, long maxCalls, boolean followForks,
      long durationNanos) {
    public Options {
      functions = List.copyOf(functions);
      tids = Set.copyOf(tids);
    }

    /** The two backends that existed before the BPF one: ptrace, or else perf. */
    public Options(List<String> functions, boolean ptrace, Set<Integer> tids,
        boolean errorsOnly, long minDurationNanos, long maxCalls, boolean followForks,
        long durationNanos) {
      this(functions, ptrace ? Backend.PTRACE : Backend.PERF, tids, errorsOnly,
          minDurationNanos, maxCalls, followForks, durationNanos);
    }

    public boolean ptrace() {
      return backend == Backend.PTRACE;
    }
  }

  /** Receives emitted records, in completion order, with their sequence number. */
  public interface Sink {
    void plan(ResolvedPlan plan) throws IOException;

    void call(long seq, CallRecord record, long realtimeNanos) throws IOException;

    /**
     * Every completed call, emitted or not, before {@link #call} for the emitted ones: for
     * statistics kept outside the session (OTLP metrics). Never slow: called after a resume.
     */
    default void counted(CallRecord record) {}

    void flush() throws IOException;
  }

  /**
   * How a session went.
   *
   * @param end why the backend stopped
   * @param maxCallsReached the session ended after --max-calls calls
   * @param targetExit the target's status when known (a launched child), else null
   * @param outputFailure the write that failed and ended the session, or null
   * @param killedAtEnd a launched target was still running when the session ended, and was
   *     killed (SIGKILL): a launched program does not outlive its session
   */
  public record Result(CallStatistics stats, Map<String, Long> counters, List<String> omitted,
      ProbeBackend.End end, boolean maxCallsReached, WaitStatus targetExit,
      IOException outputFailure, boolean killedAtEnd) {
    Result ended(ChildProcess.Ending ending) {
      return new Result(stats, counters, omitted, end, maxCallsReached, ending.status(),
          outputFailure, ending.killedByUs());
    }
  }

  private final ProcFs proc;
  private final ProbePlugin plugin;
  private final Options options;
  private final Sink sink;
  private final CallStatistics stats = new CallStatistics();
  private final Map<String, Long> counters = new TreeMap<>();
  private final List<CallRecord> unaccounted = new ArrayList<>();
  private final List<CallRecord> batch = new ArrayList<>();
  private final long epochOffset = MonotonicClock.epochOffsetNanos();
  private ProbeMonitor monitor;
  private long seq;
  private boolean maxReached;
  private IOException outputFailure;

  public TraceSession(ProcFs proc, ProbePlugin plugin, Options options, Sink sink) {
    this(proc, plugin, options, sink, null);
  }

  /** @param bpf the loaded BPF program, for {@link Backend#BPF}; the session closes it */
  public TraceSession(ProcFs proc, ProbePlugin plugin, Options options, Sink sink,
      VdsoTrace bpf) {
    this.proc = proc;
    this.plugin = plugin;
    this.options = options;
    this.sink = sink;
    this.bpf = bpf;
    if ((options.backend() == Backend.BPF) != (bpf != null)) {
      throw new IllegalArgumentException("the BPF backend, and only it, needs the program");
    }
  }

  private final VdsoTrace bpf;

  private VdsoResolver resolver() {
    // The BPF backend breaks on each function's own ret instructions: the plan must name them.
    // ptrace holds the thread at every hit, so its return slots are shared and lent: one slot a
    // function. The perf backend learns returns after the fact: two a function.
    return new VdsoResolver(proc, plugin, new ProbeRequest(options.functions(), SLOTS,
        options.backend() == Backend.BPF, options.backend() == Backend.PTRACE));
  }

  private long deadline() {
    return options.durationNanos() > 0 ? System.nanoTime() + options.durationNanos()
        : Long.MAX_VALUE;
  }

  public Result attach(int pid, BooleanSupplier userStop) throws ProbeException {
    VdsoResolver resolver = resolver();
    ResolvedPlan plan;
    try {
      plan = start(resolver.resolve(pid));
    } catch (ProbeException e) {
      closeBpf();
      throw e;
    }
    if (options.backend() == Backend.BPF) {
      BpfProbeBackend backend = new BpfProbeBackend(resolver, TargetExit.ofProc(proc, pid), bpf,
          options.followForks());
      return finish(plan, backend.run(plan, listener(), stop(userStop), deadline()), null);
    }
    if (!options.ptrace()) {
      PerfProbeBackend backend =
          new PerfProbeBackend(resolver, TargetExit.ofProc(proc, pid), SLOTS);
      return finish(plan, backend.run(plan, listener(), stop(userStop), deadline()), null);
    }
    checkNotTraced(pid);
    try (Tracer tracer = Tracer.start(pid)) {
      PtraceProbeBackend backend = new PtraceProbeBackend(resolver, tracer, proc, SLOTS,
          options.followForks(), false);
      ProbeBackend.End end = backend.run(plan, listener(), stop(userStop), deadline());
      return finish(plan, end, backend.exit());
    }
  }

  public Result launch(List<String> command, BooleanSupplier userStop) throws ProbeException {
    return launch(command, null, userStop);
  }

  /**
   * Launches {@code command} as {@code as} (null: polystack's user), traced from its first
   * instruction; it is killed if polystack dies (call this on a thread that outlives it, see
   * {@link Launcher#killedWithPolystack}).
   */
  public Result launch(List<String> command, Credentials as, BooleanSupplier userStop)
      throws ProbeException {
    Launcher launcher = Launcher.command(command);
    return launch(as == null ? launcher : launcher.runAs(as), command, userStop);
  }

  /** As {@link #launch(List, Credentials, BooleanSupplier)}, with the launcher's own settings. */
  Result launch(Launcher launcher, List<String> command, BooleanSupplier userStop)
      throws ProbeException {
    VdsoResolver resolver = resolver();
    ChildProcess child;
    try {
      child = launcher.startStopped(true).killedWithPolystack().start();
    } catch (SyscallException e) {
      closeBpf();
      throw new ProbeException("cannot start " + command.get(0) + ": " + e.getMessage());
    }
    try (child; Tracer tracer = Tracer.start(child.pid())) {
      int pid = child.pid();
      try {
        child.seizeAndRunToExec(tracer, TraceeControl.options(options.followForks()),
            Duration.ofSeconds(10));
      } catch (SyscallException | TimeoutException e) {
        throw new ProbeException("cannot run " + command.get(0) + ": " + e.getMessage());
      }
      ResolvedPlan plan = start(resolver.resolve(pid));
      if (options.ptrace()) {
        PtraceProbeBackend backend = new PtraceProbeBackend(resolver, tracer, proc, SLOTS,
            options.followForks(), true);
        ProbeBackend.End end = backend.run(plan, listener(), stop(userStop), deadline());
        Result r = finish(plan, end, backend.exit() != null ? backend.exit() : poll(child));
        if (r.targetExit() != null) {
          return r;
        }
        tracer.close(); // detached already; the child's end is ours to collect now
        return r.ended(child.end());
      }
      TargetExit exit = TargetExit.ofChild(child);
      if (options.backend() == Backend.BPF) {
        // Armed on the main thread before its first instruction: every thread it makes inherits.
        BpfProbeBackend backend = new BpfProbeBackend(resolver, exit, bpf, options.followForks());
        try {
          backend.armAll(plan);
        } catch (ProbeException e) {
          closeBpf();
          throw e;
        }
        release(tracer, pid, command);
        ProbeBackend.End end = backend.run(plan, listener(), stop(userStop), deadline());
        exit.gone();
        Result r = finish(plan, end, exit.status());
        return r.targetExit() != null ? r : r.ended(child.end());
      }
      // perf: armed before the first instruction, then never traced again (docs/operations.md, "Modes").
      PerfProbeBackend backend = new PerfProbeBackend(resolver, exit, SLOTS);
      backend.armAll(plan);
      try {
        tracer.detach(pid, 0);
      } catch (SyscallException e) {
        throw new ProbeException("cannot release " + command.get(0) + ": " + e.getMessage());
      }
      ProbeBackend.End end = backend.run(plan, listener(), stop(userStop), deadline());
      exit.gone();
      Result r = finish(plan, end, exit.status());
      return r.targetExit() != null ? r : r.ended(child.end());
    }
  }

  private static void release(Tracer tracer, int pid, List<String> command)
      throws ProbeException {
    try {
      tracer.detach(pid, 0);
    } catch (SyscallException e) {
      throw new ProbeException("cannot release " + command.get(0) + ": " + e.getMessage());
    }
  }

  private void closeBpf() {
    if (bpf != null) {
      bpf.close();
    }
  }

  private static WaitStatus poll(ChildProcess child) {
    try {
      return child.poll().orElse(null);
    } catch (SyscallException e) {
      return null;
    }
  }

  private void checkNotTraced(int pid) throws ProbeException {
    try {
      int tracer = proc.forPid(pid).status().tracerPid();
      if (tracer != 0) {
        throw new ProbeException("process " + pid + " is already traced by process " + tracer
            + " (a debugger or another tracer); detach it or use --backend perf");
      }
    } catch (ProcReadException e) {
      throw new ProbeException(e.getMessage());
    }
  }

  private ResolvedPlan start(ResolvedPlan plan) throws ProbeException {
    monitor = plugin.monitor(plan.plan());
    try {
      sink.plan(plan);
    } catch (IOException e) {
      throw new ProbeException("cannot write the output: " + e.getMessage());
    }
    return plan;
  }

  private BooleanSupplier stop(BooleanSupplier user) {
    return () -> maxReached || outputFailure != null || user.getAsBoolean();
  }

  private Result finish(ResolvedPlan plan, ProbeBackend.End end, WaitStatus exit) {
    flush();
    monitor.getAndResetCounters().forEach((k, v) -> counters.merge(k, v, Long::sum));
    return new Result(stats, Map.copyOf(counters), plan.plan().omitted(), end, maxReached,
        exit, outputFailure, false);
  }

  private HitListener listener() {
    return new HitListener() {
      @Override
      public void hit(ProbeHit hit) {
        try {
          monitor.onHit(hit, TraceSession.this::completed);
        } catch (RuntimeException e) {
// A plug-in bug must not end the session or harm the target.
count(TraceCounters.PLUGIN_ERROR.name(), 1);
        }
      }

      @Override
      public void afterResume() {
        flush();
      }

      @Override
      public void threadExited(int tid) {
        monitor.threadExited(tid);
      }

      @Override
      public void count(String reason, long n) {
        counters.merge(reason, n, Long::sum);
      }
    };
  }

  private void count(String reason, long n) {
    counters.merge(reason, n, Long::sum);
  }

  /**
   * A completed call, reported by the monitor while an exact backend holds the thread stopped:
   * only queued here, and counted by {@link #account} once the thread runs again.
   */
  private void completed(CallRecord r) {
    unaccounted.add(r);
  }

  private void account() {
    for (CallRecord r : unaccounted) {
      account(r);
    }
    unaccounted.clear();
  }

  private void account(CallRecord r) {
    if (maxReached) {
      count(TraceCounters.AFTER_MAX_CALLS.name(), 1);
      return;
    }
    stats.add(r);
    seq++;
    boolean emit = selected(r);
    if (emit) {
      stats.emitted(r);
    }
    batch.add(r);
    batchSeq.add(emit ? seq : -seq); // negative: counted, not emitted
    if (options.maxCalls() > 0 && stats.session().calls() >= options.maxCalls()) {
      maxReached = true;
    }
  }

  private final List<Long> batchSeq = new ArrayList<>();

  private boolean selected(CallRecord r) {
    return (options.tids().isEmpty() || options.tids().contains(r.tid()))
        && (!options.errorsOnly() || r.errorName() != null)
        && r.durationNanos() >= options.minDurationNanos();
  }

  private void flush() {
    account();
    if (outputFailure != null) {
      batch.clear();
      batchSeq.clear();
      return;
    }
    try {
      for (int i = 0; i < batch.size(); i++) {
        CallRecord r = batch.get(i);
        sink.counted(r);
        if (batchSeq.get(i) > 0) {
          sink.call(batchSeq.get(i), r, r.exitNanos() + epochOffset);
        }
      }
      if (!batch.isEmpty()) {
        sink.flush();
      }
    } catch (IOException e) {
      outputFailure = e;
    }
    batch.clear();
    batchSeq.clear();
  }
}
