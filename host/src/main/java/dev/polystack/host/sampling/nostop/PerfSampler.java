package dev.polystack.host.sampling.nostop;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.perf.PerfConstants;
import dev.polystack.host.perf.PerfEvent;
import dev.polystack.host.perf.PerfEventAttr;
import dev.polystack.host.perf.PerfPoll;
import dev.polystack.host.perf.PerfRecord;
import dev.polystack.host.perf.PerfRingBuffer;
import dev.polystack.host.perf.PerfSample;
import dev.polystack.host.perf.SampleParser;
import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.host.process.ModuleTable;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.CapturedThread;
import dev.polystack.host.sampling.PagePool;
import dev.polystack.host.sampling.PagePrefetch;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.RegisterConversion;
import dev.polystack.host.sampling.SampleMemory;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.host.sampling.SamplerOutcome;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.TargetCpus;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sampling.ThreadSample;
import dev.polystack.host.sched.CpuPlacement;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.MonotonicClock;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.unwind.UnwindError;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.plugin.api.Registers;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The perf sampling loop: one cpu-clock event and one ring per target thread, read by a single
 * thread (the caller's) that parses samples, walks each from its registers and stack copy, and
 * hands the result on. The target is never stopped: the kernel copies registers and the top of
 * the stack at each timer tick, and unwinding happens here, off the target's path.
 *
 * <p>Per-thread events rather than one inherited event because the kernel refuses to mmap an
 * inherited per-task event (EINVAL); new threads are therefore found by re-listing
 * /proc/PID/task, so a thread's first {@link #RESCAN_NANOS} can go unsampled.
 */
public final class PerfSampler implements NoStopSampler {
  // SAMPLE_CPU: where the thread ran at the tick, so that polystack's threads can keep off it.
  static final long SAMPLE_TYPE = PerfConstants.SAMPLE_IP | PerfConstants.SAMPLE_TID
      | PerfConstants.SAMPLE_TIME | PerfConstants.SAMPLE_CPU | PerfConstants.SAMPLE_REGS_USER
      | PerfConstants.SAMPLE_STACK_USER;
  static final long REGS = PerfConstants.REGS_GENERAL;

  /** How often new threads are looked for and the target's exit is checked. */
  static final long RESCAN_NANOS = 100_000_000L;

  /**
   * Each ring holds this much sampling time at the requested rate, so the reader may fall
   * behind by that long (a busy host, a slow walk) before the kernel drops records.
   */
  static final long RING_MILLIS = 50;

  /** Ring bounds: 8 pages hold one 16 KiB-stack record with room; 256 pages are 1 MiB. */
  static final int MIN_RING_LOG2 = 3;
  static final int MAX_RING_LOG2 = 8;

  /**
   * Bytes of a sample record besides the stack copy: header, ip, tid, time, cpu, abi, regs,
   * sizes.
   */
  static final int RECORD_OVERHEAD = 8 + 8 + 8 + 8 + 8 + 8 + 17 * 8 + 8 + 8;

  /** @param eachSample the event wakes the reader at every sample (see {@link #open}) */
  private record Stream(int tid, PerfEvent event, PerfRingBuffer ring, boolean eachSample) {}

  private final TargetProcess target;
  private final SamplingOptions options;
  private final StackWalker walker;
  private final SampleSink sink;
  private final Runnable refreshRequest;
  private final Consumer<String> warn;
  private final PerfEventAttr attr;
  private final PerfEventAttr attrEachSample;
  private final SampleParser parser;
  private final int ringLog2;
  private final long epochOffset = MonotonicClock.epochOffsetNanos();
  private final Map<Integer, Stream> streams = new LinkedHashMap<>();
  private final Set<Integer> refused = new HashSet<>();
  private final PerfPoll poll = new PerfPoll();
  private final PagePrefetch prefetch = new PagePrefetch();
  /** Page buffers for one prefetch, reused: a walk ends before the next sample's prefetch. */
  private final PagePool pagePool = new PagePool();
  private final PollLoop.SyncRefresh syncRefresh;
  /** Keeps polystack's threads off the CPUs the samples were taken on (see CpuPlacement). */
  private final CpuPlacement placement = CpuPlacement.forThisProcess();
  /** CPUs of the samples drained since the last placement; reused. */
  private final java.util.BitSet targetCpus = new java.util.BitSet();

  public PerfSampler(TargetProcess target, SamplingOptions options, StackWalker walker,
      SampleSink sink, Runnable refreshRequest, Consumer<String> warn) {
    this.target = target;
    this.options = options;
    this.walker = walker;
    this.sink = sink;
    this.refreshRequest = refreshRequest;
    this.warn = warn;
    int stack = stackBytes(options);
    this.ringLog2 = ringPagesLog2(options.rateHz(), stack);
    this.attr = attr(options, stack, (4096 << ringLog2) / 4);
    this.attrEachSample = attr(options, stack, 0);
    this.parser = SampleParser.forAttr(attr);
    this.syncRefresh = new PollLoop.SyncRefresh(target);
  }

  /** @param watermark bytes in the ring that wake the reader, or 0 to wake it at every sample */
  static PerfEventAttr attr(SamplingOptions options, int stackBytes, int watermark) {
    PerfEventAttr.Builder b = cpuClock(options.periodNanos(), stackBytes);
    // Wake the reader when a ring is a quarter full (the poll timeout covers quiet rings), or at
    // every sample when the walk must read the target's memory soon after the tick.
    return (watermark > 0 ? b.wakeupWatermark(watermark) : b.wakeupEvents(1)).build();
  }

  /**
   * A disabled cpu-clock sampling event with the user registers and {@code stackBytes} of the
   * stack copied at each sample, timed on the clock of System.nanoTime(); the perf engine's
   * per-CPU events are these too.
   */
  public static PerfEventAttr.Builder cpuClock(long periodNanos, int stackBytes) {
    // cpu-clock counts only while the thread runs, which is the default "on-CPU only". A fixed
    // period equals what sample_freq would give: the kernel turns a cpu-clock frequency into
    // the period 1e9/freq anyway (perf_swevent_init_hrtimer).
    return PerfEventAttr.builder()
        .type(PerfConstants.TYPE_SOFTWARE)
        .config(PerfConstants.COUNT_SW_CPU_CLOCK)
        .samplePeriod(periodNanos)
        .sampleType(SAMPLE_TYPE)
        .sampleRegsUser(REGS)
        .sampleStackUser(stackBytes)
        .excludeKernel(true)
        .excludeHv(true)
        // One offset makes these times wall time (MonotonicClock.epochOffsetNanos).
        .clockid(PerfConstants.CLOCK_MONOTONIC)
        .disabled(true);
  }

  /** The stack copy: what the options ask for, within what the kernel accepts. */
  static int stackBytes(SamplingOptions options) {
    int wanted = Math.max(8, options.stackBytes());
    return Math.min(wanted, PerfConstants.MAX_STACK_USER - 2048) & ~7;
  }

  /** log2 of the data pages that hold {@link #RING_MILLIS} of samples, bounded. */
  static int ringPagesLog2(int rateHz, int stackBytes) {
    long bytes = (long) rateHz * (stackBytes + RECORD_OVERHEAD) * RING_MILLIS / 1000;
    long pages = Math.max(1, (bytes + 4095) / 4096);
    int log2 = 64 - Long.numberOfLeadingZeros(pages - 1);
    return Math.max(MIN_RING_LOG2, Math.min(MAX_RING_LOG2, log2));
  }

  /**
   * Opens an event for every thread of the target. A failure other than a thread that just
   * exited (e.g. EACCES: not allowed to profile) ends the run with one clear message.
   */
  @Override
  public void openAll() throws SamplingException {
    for (int tid : ProcFs.system().forPid(target.pid()).taskIdsOrEmpty()) {
      if (wanted(tid) && !streams.containsKey(tid)) {
        try {
          open(tid);
        } catch (SyscallException e) {
          if (e.errno() != Errno.ESRCH) {
            throw new SamplingException("cannot sample process " + target.pid() + " in perf"
                + " mode: " + e.getMessage());
          }
        }
      }
    }
    if (streams.isEmpty()) {
      throw new SamplingException("process " + target.pid() + " has no thread to sample"
          + (options.threads().isEmpty() ? " (it has exited)" : " among --threads"));
    }
  }

  /**
   * Pins polystack's threads away from where the target's threads last ran, before a launched
   * program is let go: the start-up's compilation would otherwise preempt it there.
   */
  @Override
  public void placeBeforeStart(dev.polystack.host.proc.ProcFs proc) {
    placement.targetRunsOn(TargetCpus.lastOf(proc, target.pid(), options.threads()),
        System.nanoTime());
  }

  /** Samples until {@code stop}, the duration's end or the target's exit. */
  @Override
  public SamplerOutcome run(BooleanSupplier stop, TargetExit exit) throws SyscallException {
    PollLoop.Ended ended = PollLoop.run(options, RESCAN_NANOS, stop, exit, new PollLoop.Body() {
      @Override
      public boolean poll(int timeoutMillis) throws SyscallException {
        pollAndDrain(timeoutMillis);
        return true; // new threads are looked for at the housekeeping pace: never slowed down
      }

      @Override
      public void afterPoll(long nowNanos) {
        placement.targetRunsOn(targetCpus, nowNanos);
        targetCpus.clear();
      }

      @Override
      public void housekeeping() {
        rescan();
      }
    });
    for (Stream s : streams.values()) {
      drain(s); // what the kernel wrote before the end still counts
    }
    placement.close();
    return new SamplerOutcome(exit.status(), ended.byUser(), ended.targetGone());
  }

  private boolean wanted(int tid) {
    return options.threads().isEmpty() || options.threads().contains(tid);
  }

  /**
   * Opens a thread's event. A process with a runtime plug-in gets an event that wakes the reader at
   * every sample: the runtime's own structures (the Lua stack) are not in the kernel's copy and are
   * read from the running target when the sample is walked, so every millisecond between the tick
   * and the walk lets them drift from what the registers show (a cheap watermark delays the walk by
   * milliseconds: docs/benchmarks.md, "Figures behind the code's choices"). A native-only walk
   * needs nothing but the copy and keeps the cheap watermark.
   */
  private void open(int tid) throws SyscallException {
    boolean eachSample = !target.table().bindings().isEmpty();
    PerfEvent event = PerfEvent.open(eachSample ? attrEachSample : attr, tid);
    try {
      PerfRingBuffer ring = mapRing(event);
      event.enable();
      streams.put(tid, new Stream(tid, event, ring, eachSample));
    } catch (SyscallException | RuntimeException e) {
      closeQuietly(event);
      throw e;
    }
  }

  /**
   * Maps the ring, halving it while the locked-memory allowance (perf_event_mlock_kb and
   * RLIMIT_MEMLOCK, which root bypasses) refuses: a smaller ring loses records under load, no
   * ring loses everything.
   */
  private PerfRingBuffer mapRing(PerfEvent event) throws SyscallException {
    for (int log2 = ringLog2; ; log2--) {
      try {
        return event.mapRing(log2);
      } catch (SyscallException e) {
        boolean limit = e.kind() == SyscallException.Kind.PERMISSION
            || e.kind() == SyscallException.Kind.NO_SPACE;
        if (!limit || log2 <= MIN_RING_LOG2) {
          throw e;
        }
      }
    }
  }

  /**
   * Follows new threads and lets go of exited ones. Once a runtime plug-in has found its
   * runtime (a shared libluajit is mapped after the exec the record starts at), threads opened
   * before are reopened with an event that wakes the reader at every sample.
   */
  private void rescan() {
    List<Integer> tids = ProcFs.system().forPid(target.pid()).taskIdsOrEmpty();
    Set<Integer> live = new HashSet<>(tids);
    boolean runtime = !target.table().bindings().isEmpty();
    for (Stream s : List.copyOf(streams.values())) {
      if (!live.contains(s.tid())) {
        drain(s);
        close(s);
        prefetch.forget(s.tid());
      } else if (runtime && !s.eachSample()) {
        drain(s);
        close(s); // reopened below
      }
    }
    refused.retainAll(live);
    for (int tid : tids) {
      if (!wanted(tid) || streams.containsKey(tid) || refused.contains(tid)) {
        continue;
      }
      try {
        open(tid);
      } catch (SyscallException e) {
        if (e.errno() != Errno.ESRCH) {
          // Not retried: an fd or memory limit would fail again every 100 ms.
          refused.add(tid);
          sink.lost(HostCounters.PERF_OPEN_FAILED);
          warn.accept("thread " + tid + " is not sampled: " + e.getMessage());
        }
      }
    }
  }

  private void pollAndDrain(int timeoutMillis) throws SyscallException {
    Stream[] list = streams.values().toArray(new Stream[0]);
    int[] fds = new int[list.length];
    for (int i = 0; i < list.length; i++) {
      fds[i] = list[i].event().fd();
    }
    short[] revents = poll.await(fds, timeoutMillis);
    for (int i = 0; i < list.length; i++) {
      drain(list[i]);
      if ((revents[i] & (PerfPoll.POLLHUP | PerfPoll.POLLERR)) != 0) {
        close(list[i]); // the thread exited: its event will never fire again
      }
    }
  }

  /**
   * Empties one ring. Records are copied out first and processed after the tail moved, so the
   * kernel gets the space back before the (slow) walks.
   */
  private void drain(Stream s) {
    List<PerfRecord> records = new ArrayList<>();
    long malformed = s.ring().stats().malformed();
    s.ring().drain(records::add);
    sink.lost(HostCounters.MALFORMED_RECORD, s.ring().stats().malformed() - malformed);
    for (PerfRecord r : records) {
      if (r.type() == PerfConstants.RECORD_SAMPLE) {
        sample(r);
      } else if (r.type() == PerfConstants.RECORD_LOST) {
        // struct { u64 id; u64 lost; }: samples the kernel dropped because the ring was full
        sink.lost(HostCounters.RING_LOST, r.body().length >= 16 ? r.buffer().getLong(8) : 1);
      }
    }
  }

  private void sample(PerfRecord r) {
    PerfSample s;
    try {
      s = parser.parse(r);
    } catch (IllegalArgumentException e) {
      sink.lost(HostCounters.MALFORMED_RECORD);
      return;
    }
    if (s.regsAbi() == 0 || s.regs().length != Long.bitCount(REGS)) {
// No user context at the tick (the kernel says ABI_NONE).
sink.lost(HostCounters.NO_USER_REGS);
      return;
    }
    if (s.cpu() >= 0) {
      targetCpus.set(s.cpu());
    }
    Registers regs = RegisterConversion.fromPerf(s.regs(), REGS);
    RawStack stack = walk(s, regs);
    if (stack.endedWith(UnwindError.NO_MODULE)) {
      refreshRequest.run(); // also records the new modules for the Recording
      if (syncRefresh.now()) {
        // Unlike a ptrace stop, the sample outlives the moment: the copy is ours, so the same
        // sample can be walked again once the new modules (libc right after exec) are loaded.
        stack = walk(s, regs);
      }
    }
    sink.accept(new ThreadSample(s.tid(), s.time() + epochOffset, stack, 0, 1));
  }

  private RawStack walk(PerfSample s, Registers regs) {
    long sp = regs.sp();
    int copied = (int) s.stackDynSize();
    ModuleTable table = target.table();
    // The copy is served first; reads beyond it go to the live, running target: racy, which the
    // unwinder and the plug-ins tolerate by validating everything they derive.
    if (table.bindings().isEmpty()) {
      SampleMemory memory = new SampleMemory(target.hostMemory(), sp, s.stack(), copied);
      return walker.walk(new CapturedThread(target.pid(), s.tid(), regs, memory, sp, copied),
          table);
    }
    // A runtime walk reads the same few heap pages sample after sample: read those in one
    // system call first, so the walk sees the runtime at one instant right after the tick.
    SampleMemory memory = SampleMemory.prefetched(target.hostMemory(), sp, s.stack(), copied,
        prefetchPages(s.tid()));
    RawStack stack = walker.walk(
        new CapturedThread(target.pid(), s.tid(), regs, memory, sp, copied), table);
    prefetch.walked(s.tid(), memory.pagesRead(), memory.missedPages());
    return stack;
  }

  /** The thread's expected pages, read together; an empty map when none are known yet. */
  private Map<Long, byte[]> prefetchPages(int tid) {
    long[] want = prefetch.pages(tid);
    if (want.length == 0) {
      return Map.of();
    }
    Map<Long, byte[]> pages = new java.util.HashMap<>();
    try {
      pagePool.read(target.hostMemory(), 0, null, want, pages);
    } catch (RemoteReadException e) {
      return Map.of(); // the walk reads page by page instead
    }
    return pages;
  }

  private void close(Stream s) {
    streams.remove(s.tid());
    closeQuietly(s.event());
  }

  private static void closeQuietly(PerfEvent event) {
    try {
      event.close();
    } catch (SyscallException e) {
      // close(2) of a perf fd only fails for a bad fd; nothing is left to release
    }
  }

  @Override
  public void close() {
    placement.close();
    for (Stream s : List.copyOf(streams.values())) {
      close(s);
    }
  }
}
