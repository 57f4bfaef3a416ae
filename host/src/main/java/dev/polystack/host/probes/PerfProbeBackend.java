package dev.polystack.host.probes;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.TargetExit;

import dev.polystack.host.perf.PerfConstants;
import dev.polystack.host.perf.PerfEventAttr;
import dev.polystack.host.perf.PerfPoll;
import dev.polystack.host.perf.PerfRecord;
import dev.polystack.host.perf.PerfSample;
import dev.polystack.host.perf.SampleParser;
import dev.polystack.host.sampling.RegisterConversion;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.counters.TraceCounters;
import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.ProbeHit;
import dev.polystack.plugin.api.ProbeSite;
import dev.polystack.plugin.api.Registers;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * Probes without stopping: PERF_TYPE_BREAKPOINT events per thread that sample registers and a
 * small window of the user stack into a ring at every hit. The target never stops and never
 * sees a signal; it is not even traced. Arguments come from the registers at entry, the return
 * address from the first stack word; the result from rax at the return site, and outputs from
 * the return hit's stack window when the caller's buffer lies in it (see the vDSO plug-in).
 *
 * <p>A return site is armed when the reader sees the first entry that returns there, after that
 * call has long returned: the first call from each call site has no return (counted by the
 * plug-in as return_missed). New threads are found by re-listing /proc/PID/task every
 * {@link #RESCAN_NANOS}, so a new thread's first calls can be missed too; an exec is seen as a
 * new vDSO base in the auxiliary vector, and the plan is made again for the new image.
 */
public final class PerfProbeBackend implements ProbeBackend {
  static final long SAMPLE_TYPE = PerfConstants.SAMPLE_IP | PerfConstants.SAMPLE_TID
      | PerfConstants.SAMPLE_TIME | PerfConstants.SAMPLE_REGS_USER
      | PerfConstants.SAMPLE_STACK_USER;
  static final long REGS = PerfConstants.REGS_GENERAL;
  /** Enough for the timespec/timeval locals of a typical caller, small enough to copy fast. */
  public static final int STACK_BYTES = 512;
  /**
   * 1 MiB of ring per thread: about 1500 samples of ~700 bytes, so a reader descheduled for a
   * few time slices loses nothing (a quarter of it lost samples on a loaded machine, measured in
   * docs/benchmarks.md, "Figures behind the code's choices"). Halved when locked memory is short.
   */
  static final int RING_LOG2 = 8;
  static final int WAKEUP_BYTES = 64 << 10;
  static final long RESCAN_NANOS = 100_000_000L;
  static final int POLL_MILLIS = 10;

  private final VdsoResolver resolver;
  private final TargetExit exit;
  private final int slots;
  private final SampleParser parser;
  private final Map<Integer, Breakpoints> threads = new LinkedHashMap<>();
  private final Set<Integer> refused = new HashSet<>();
  private final PerfPoll poll = new PerfPoll();
  private ResolvedPlan plan;
  private HitListener listener;

  /** @param exit tells when the target is gone (a launched child is reaped through it) */
  public PerfProbeBackend(VdsoResolver resolver, TargetExit exit, int slots) {
    this.resolver = resolver;
    this.exit = exit;
    this.slots = slots;
    this.parser = SampleParser.forAttr(attr(0));
  }

  static PerfEventAttr attr(long address) {
    return Breakpoints.base(address)
        .sampleType(SAMPLE_TYPE)
        .sampleRegsUser(REGS)
        .sampleStackUser(STACK_BYTES)
        .clockid(PerfConstants.CLOCK_MONOTONIC)
        // Wake the reader after ~90 samples, not at a fraction of the ring: return sites are
        // armed only once the reader has seen an entry, so a late first wake-up misses more
        // returns. The poll timeout covers quiet rings.
        .wakeupWatermark(WAKEUP_BYTES)
        .build();
  }

  /**
   * Opens the breakpoints of every thread; the caller may then let a launched target go. Fails
   * with one clear line when not even one thread can be armed.
   */
  public void armAll(ResolvedPlan resolved) throws ProbeException {
    this.plan = resolved;
    for (int tid : ProcFs.system().forPid(resolved.pid()).taskIdsOrEmpty()) {
      try {
        arm(tid);
      } catch (SyscallException e) {
        if (e.errno() != Errno.ESRCH) {
          closeAll();
          throw new ProbeException("cannot arm breakpoints in process " + resolved.pid() + ": "
              + e.getMessage());
        }
      }
    }
    if (threads.isEmpty()) {
      throw new ProbeException("process " + resolved.pid() + " has no thread left to trace");
    }
  }

  @Override
  public End run(ResolvedPlan resolved, HitListener hits, BooleanSupplier stop,
      long deadlineNanos) throws ProbeException {
    this.listener = hits;
    if (plan == null) {
      armAll(resolved);
    }
    try {
      long nextScan = System.nanoTime() + RESCAN_NANOS;
      while (true) {
        if (stop.getAsBoolean()) {
          return End.STOPPED;
        }
        long now = System.nanoTime();
        if (now >= deadlineNanos) {
          return End.DEADLINE;
        }
        pollAndDrain((int) Math.min(POLL_MILLIS, (deadlineNanos - now + 999_999) / 1_000_000));
        if (System.nanoTime() >= nextScan) {
          nextScan = System.nanoTime() + RESCAN_NANOS;
          if (exit.gone()) {
            return End.TARGET_EXITED;
          }
          rescan();
        }
      }
    } catch (SyscallException e) {
      throw new ProbeException("tracing process " + plan.pid() + " failed: " + e.getMessage());
    } finally {
      for (Breakpoints b : List.copyOf(threads.values())) {
        drain(b); // what the kernel wrote before the end still counts
      }
      closeAll();
    }
  }

  private void arm(int tid) throws SyscallException {
    threads.put(tid, Breakpoints.arm(tid, plan, slots, PerfProbeBackend::attr, RING_LOG2));
  }

  /** Follows new threads, lets go of exited ones, and re-plans after an exec. */
  private void rescan() throws ProbeException {
    OptionalLong base = resolver.base(plan.pid());
    if (base.isPresent() && base.getAsLong() != plan.vdsoBase()) {
      reResolve();
      return;
    }
    List<Integer> tids = ProcFs.system().forPid(plan.pid()).taskIdsOrEmpty();
    Set<Integer> live = new HashSet<>(tids);
    for (Breakpoints b : List.copyOf(threads.values())) {
      if (!live.contains(b.tid())) {
        drain(b);
        forget(b);
      }
    }
    refused.retainAll(live);
    for (int tid : tids) {
      if (threads.containsKey(tid) || refused.contains(tid)) {
        continue;
      }
      try {
        arm(tid);
      } catch (SyscallException e) {
        if (e.errno() != Errno.ESRCH) {
          refused.add(tid); // not retried: a limit would refuse again every rescan
          listener.count(TraceCounters.THREAD_NOT_ARMED, 1);
        }
      }
    }
  }

  private void reResolve() throws ProbeException {
    for (Breakpoints b : List.copyOf(threads.values())) {
      drain(b);
      forget(b);
    }
    refused.clear();
    try {
      plan = resolver.resolve(plan.pid());
    } catch (ProbeException e) {
      if (exit.gone()) {
        return;
      }
      throw e;
    }
    listener.planChanged(plan);
    for (int tid : ProcFs.system().forPid(plan.pid()).taskIdsOrEmpty()) {
      try {
        arm(tid);
      } catch (SyscallException e) {
        listener.count(TraceCounters.THREAD_NOT_ARMED, 1);
      }
    }
  }

  private void pollAndDrain(int timeoutMillis) throws SyscallException {
    Breakpoints[] list = threads.values().toArray(new Breakpoints[0]);
    int[] fds = new int[list.length];
    for (int i = 0; i < list.length; i++) {
      fds[i] = list[i].leader().fd();
    }
    short[] revents = poll.await(fds, timeoutMillis);
    for (int i = 0; i < list.length; i++) {
      drain(list[i]);
      if ((revents[i] & (PerfPoll.POLLHUP | PerfPoll.POLLERR)) != 0) {
        forget(list[i]); // the thread exited (or exec'd: the rescan sees the new vDSO)
      }
    }
  }

  private void drain(Breakpoints b) {
    List<PerfRecord> records = new ArrayList<>();
    long malformed = b.ring().stats().malformed();
    b.ring().drain(records::add);
    long bad = b.ring().stats().malformed() - malformed;
    if (bad > 0) {
      listener.count(TraceCounters.MALFORMED_RECORD, bad);
    }
    for (PerfRecord r : records) {
      if (r.type() == PerfConstants.RECORD_SAMPLE) {
        sample(b, r);
      } else if (r.type() == PerfConstants.RECORD_LOST) {
        // struct { u64 id; u64 lost; }: hits the kernel dropped because the ring was full
        listener.count(TraceCounters.RING_LOST,
            r.body().length >= 16 ? r.buffer().getLong(8) : 1);
      } else if (r.type() == PerfConstants.RECORD_THROTTLE) {
        // The kernel's sample-rate limit paused an event.
        listener.count(TraceCounters.THROTTLED, 1);
      }
    }
    if (!records.isEmpty()) {
      listener.afterResume();
    }
  }

  private void sample(Breakpoints b, PerfRecord r) {
    PerfSample s;
    try {
      s = parser.parse(r);
    } catch (IllegalArgumentException e) {
      listener.count(TraceCounters.MALFORMED_RECORD, 1);
      return;
    }
    if (s.regsAbi() == 0 || s.regs().length != Long.bitCount(REGS)) {
      listener.count(TraceCounters.NO_USER_REGS, 1);
      return;
    }
    Registers regs = RegisterConversion.fromPerf(s.regs(), REGS);
    byte[] stack = Arrays.copyOf(s.stack(), (int) s.stackDynSize());
    ProbeSite entry = b.entryAt(regs.pc());
    ProbeSite site = entry != null ? entry
        : new ProbeSite("", "", regs.pc(), ProbeSite.Kind.RETURN);
    if (entry != null && stack.length >= 8) {
      watchReturn(b, Bytes.getLong(stack, 0));
    }
    listener.hit(new ProbeHit(site, s.pid(), s.tid(), s.time(), regs, stack, null));
  }

  private void watchReturn(Breakpoints b, long returnAddress) {
    try {
      switch (b.watchReturn(returnAddress)) {
        case RETARGETED -> listener.count(TraceCounters.RETURN_SLOT_RETARGETED, 1);
        case NO_SLOT -> listener.count(TraceCounters.NO_RETURN_SLOT, 1);
        default -> { }
      }
    } catch (SyscallException e) {
      if (e.errno() != Errno.ESRCH) { // ESRCH: the thread is gone, nothing will return
        listener.count(TraceCounters.RETURN_SLOT_FAILED, 1);
      }
    }
  }

  private void forget(Breakpoints b) {
    threads.remove(b.tid());
    b.close();
    listener.threadExited(b.tid());
  }

  private void closeAll() {
    for (Breakpoints b : threads.values()) {
      b.close();
    }
    threads.clear();
  }
}
