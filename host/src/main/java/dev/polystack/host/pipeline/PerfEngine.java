package dev.polystack.host.pipeline;

import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.ProcessEvent;
import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.perf.PerfConstants;
import dev.polystack.host.perf.PerfEvent;
import dev.polystack.host.perf.PerfEventAttr;
import dev.polystack.host.perf.PerfPoll;
import dev.polystack.host.perf.PerfRecord;
import dev.polystack.host.perf.PerfRingBuffer;
import dev.polystack.host.perf.PerfSample;
import dev.polystack.host.perf.SampleParser;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessList;
import dev.polystack.host.sampling.RegisterConversion;
import dev.polystack.host.perf.CpuClockEvent;
import dev.polystack.host.sampling.nostop.ProcessTicks;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The perf engine: one cpu-clock event per CPU for every process (perf_event_open with pid -1),
 * each sample a copy of the user registers and the top of the stack, and the same events' task
 * and comm records as the fork, exit and exec of processes. Samples of processes not selected
 * are dropped here, so the kernel needs nothing per process: a child is sampled from its first
 * tick once its fork is read. It runs no capture plan: a runtime's own structures are read from
 * the live process when the sample is walked, right after the tick (docs/operations.md, "Modes").
 */
final class PerfEngine implements CaptureEngine {
  static final long REGS = PerfConstants.REGS_GENERAL;
  /**
   * Each CPU's ring holds this much sampling time: how far the reader may fall behind while it
   * describes a new process (the bpf engine's one ring holds about as long).
   */
  static final long RING_MILLIS = 1000;
  /** perf_event_header.misc bit of a PERF_RECORD_COMM that an exec caused. */
  static final int MISC_COMM_EXEC = 1 << 13;

  private record Cpu(int cpu, PerfEvent event, PerfRingBuffer ring) {}

  /** A record read from a ring, with the time it is ordered by across CPUs. */
  private record Timed(long time, PerfRecord record) {}

  private final int rateHz;
  private final int stackBytes;
  private final boolean hostWide;
  private final boolean watchExec;
  private final int self = (int) ProcessHandle.current().pid();
  private final Set<Integer> selected = new HashSet<>();
  private final Set<Integer> followed = new HashSet<>();
  private final List<Cpu> cpus = new ArrayList<>();
  private final PerfPoll poll = new PerfPoll();
  private final Map<String, Long> counters = new TreeMap<>();
  /** Forks from before the start, found in /proc ({@link #catchUp}). */
  private final List<ProcessEvent> caughtUp = new ArrayList<>();
  private PerfEventAttr attr;
  private SampleParser parser;

  /**
   * @param hostWide every process is a target (polystack excepted)
   * @param watchExec every exec is an event, for a selection that may gain a process by name
   */
  PerfEngine(int rateHz, int stackBytes, boolean hostWide, boolean watchExec) {
    if (rateHz < 1 || rateHz > 10_000) {
      throw new IllegalArgumentException("rate must be 1..10000 Hz: " + rateHz);
    }
    this.rateHz = rateHz;
    this.stackBytes = Math.min(Math.max(8, stackBytes), PerfConstants.MAX_STACK_USER - 2048) & ~7;
    this.hostWide = hostWide;
    this.watchExec = watchExec;
  }

  @Override
  public String name() {
    return "perf";
  }

  /** A per-CPU event is what needs privilege; opening one on the first CPU says whether it may. */
  @Override
  public Optional<String> check() {
    try {
      PerfEvent probe = PerfEvent.open(attr(), -1, firstCpu(), -1, 0);
      probe.close();
      return Optional.empty();
    } catch (SyscallException e) {
      return Optional.of("per-CPU perf events refused (" + e.getMessage() + "): run as root, or"
          + " grant CAP_PERFMON, or set /proc/sys/kernel/perf_event_paranoid to 0 or below");
    } catch (EngineException e) {
      return Optional.of(e.getMessage());
    }
  }

  @Override
  public void start() throws EngineException {
    if (!cpus.isEmpty()) {
      throw new IllegalStateException("already started");
    }
    List<Integer> online;
    try {
      online = TickCapture.onlineCpus();
    } catch (BpfLoadException | RuntimeException e) {
      throw new EngineException(e.getMessage());
    }
    int log2 = ringPagesLog2();
    try {
      for (int cpu : online) {
        PerfEvent event = PerfEvent.open(attr(), -1, cpu, -1, 0);
        try {
          PerfRingBuffer ring = event.mapRing(log2);
          cpus.add(new Cpu(cpu, event, ring));
        } catch (SyscallException | RuntimeException e) {
          closeQuietly(event);
          throw e;
        }
      }
      for (Cpu c : cpus) {
        c.event().enable();
      }
      catchUp();
    } catch (SyscallException e) {
      close();
      throw new EngineException("cannot open per-CPU perf events: " + e.getMessage()
          + "; run as root or grant CAP_PERFMON");
    }
  }

  /**
   * Children a followed process created before the events were on have no fork record: found
   * once in /proc now, and told as forks at the first poll.
   */
  private void catchUp() {
    if (followed.isEmpty()) {
      return;
    }
    ProcessList list;
    try {
      list = ProcessList.read(ProcFs.system());
    } catch (ProcessList.TooLargeException | RuntimeException e) {
      return; // the fork records from now on still follow the rest
    }
    for (int pid : list.withDescendants(List.copyOf(followed))) {
      ProcessList.Entry e = list.get(pid).orElse(null);
      if (e != null && !selected.contains(pid) && pid != self) {
        selected.add(pid);
        followed.add(pid);
        caughtUp.add(new ProcessEvent(ProcessEvent.Kind.FORK, pid, pid, 0, e.ppid()));
      }
    }
  }

  private PerfEventAttr attr() {
    if (attr == null) {
      // cpu-clock on a CPU counts while anything runs there; with kernel samples excluded, what
      // is left are ticks of user code, as a per-thread cpu-clock event gives.
      attr = CpuClockEvent.attr(1_000_000_000L / rateHz, stackBytes)
          .task(true)
          .comm(true)
          .commExec(true)
          .sampleIdAll(true)
          // A runtime's structures are read live at the walk: every sample wakes the reader.
          .wakeupEvents(1)
          .build();
      parser = SampleParser.forAttr(attr);
    }
    return attr;
  }

  private int ringPagesLog2() {
    long bytes = (long) rateHz * (stackBytes + 400) * RING_MILLIS / 1000;
    long pages = Math.max(1, (bytes + 4095) / 4096);
    int log2 = 64 - Long.numberOfLeadingZeros(pages - 1);
    return Math.max(3, Math.min(10, log2));
  }

  private static int firstCpu() throws EngineException {
    try {
      return TickCapture.onlineCpus().get(0);
    } catch (BpfLoadException | RuntimeException e) {
      throw new EngineException(e.getMessage());
    }
  }

  @Override
  public void poll(int timeoutMillis, Listener listener) {
    if (cpus.isEmpty()) {
      throw new IllegalStateException("engine not started");
    }
    int[] fds = new int[cpus.size()];
    for (int i = 0; i < fds.length; i++) {
      fds[i] = cpus.get(i).event().fd();
    }
    try {
      poll.await(fds, timeoutMillis);
    } catch (SyscallException e) {
      // poll(2) fails only for a bad fd or no memory; the rings are drained all the same
    }
    // Rings are per CPU: a fork read from one and its child's first tick from another are put
    // back in time order, so the child is selected before its ticks are looked at.
    List<Timed> all = new ArrayList<>();
    for (Cpu c : cpus) {
      long malformed = c.ring().stats().malformed();
      c.ring().drain(r -> all.add(new Timed(timeOf(r), r)));
      long bad = c.ring().stats().malformed() - malformed;
      for (long i = 0; i < bad; i++) {
        listener.malformed();
      }
    }
    all.sort(Comparator.comparingLong(Timed::time));
    caughtUp.forEach(listener::event);
    caughtUp.clear();
    for (Timed t : all) {
      handle(t.record(), listener);
    }
  }

  private void handle(PerfRecord r, Listener listener) {
    switch (r.type()) {
      case PerfConstants.RECORD_SAMPLE -> sample(r, listener);
      case PerfConstants.RECORD_LOST ->
          count("ring_lost", r.body().length >= 16 ? r.buffer().getLong(8) : 1);
      case PerfConstants.RECORD_FORK -> task(r, ProcessEvent.Kind.FORK, listener);
      case PerfConstants.RECORD_EXIT -> task(r, ProcessEvent.Kind.EXIT, listener);
      case PerfConstants.RECORD_COMM -> comm(r, listener);
      default -> { }
    }
  }

  private void sample(PerfRecord r, Listener listener) {
    PerfSample s;
    try {
      s = parser.parse(r);
    } catch (IllegalArgumentException e) {
      listener.malformed();
      return;
    }
    if (s.pid() == self || !hostWide && !selected.contains(s.pid())) {
      return;
    }
    count("ticks", 1);
    if (s.regsAbi() == 0 || s.regs().length != Long.bitCount(REGS)) {
      count("perf_no_user_regs", 1);
      return;
    }
    Registers regs = RegisterConversion.fromPerf(s.regs(), REGS);
    long[] byOrdinal = new long[Register.values().length];
    for (Register reg : Register.values()) {
      byOrdinal[reg.ordinal()] = regs.get(reg);
    }
    int copied = (int) Math.max(0, Math.min(s.stackDynSize(), s.stack().length));
    count("records", 1);
    listener.tick(new CaptureRecord(s.pid(), s.tid(), s.time(), s.cpu(), false, byOrdinal,
        regs.sp(), Arrays.copyOf(s.stack(), copied), new int[0], List.of(), 0));
  }

  /** PERF_RECORD_FORK and _EXIT: {u32 pid, ppid, tid, ptid; u64 time}; threads are not news. */
  private void task(PerfRecord r, ProcessEvent.Kind kind, Listener listener) {
    if (r.body().length < 24) {
      listener.malformed();
      return;
    }
    ByteBuffer b = r.buffer().order(ByteOrder.LITTLE_ENDIAN);
    int pid = b.getInt(0);
    int ppid = b.getInt(4);
    int tid = b.getInt(8);
    long time = b.getLong(16);
    if (pid != tid || pid == self) {
      return;
    }
    if (kind == ProcessEvent.Kind.FORK) {
      if (!followed.contains(ppid)) {
        return;
      }
      selected.add(pid);
      followed.add(pid);
    } else if (!hostWide && !selected.contains(pid)) {
      return;
    }
    listener.event(new ProcessEvent(kind, pid, tid, time, ppid));
    if (kind == ProcessEvent.Kind.EXIT) {
      selected.remove(pid);
      followed.remove(pid);
    }
  }

  /** PERF_RECORD_COMM from an exec: {u32 pid, tid; char comm[]; sample_id}. */
  private void comm(PerfRecord r, Listener listener) {
    if ((r.misc() & MISC_COMM_EXEC) == 0) {
      return; // a thread renamed itself
    }
    if (r.body().length < 8) {
      listener.malformed();
      return;
    }
    ByteBuffer b = r.buffer().order(ByteOrder.LITTLE_ENDIAN);
    int pid = b.getInt(0);
    if (pid == self || !hostWide && !watchExec && !selected.contains(pid)) {
      return;
    }
    listener.event(new ProcessEvent(ProcessEvent.Kind.EXEC, pid, b.getInt(4), timeOf(r), 0));
  }

  /**
   * A record's time: a sample's own, a task record's field, else the sample_id trailer (whose
   * last fields are time then cpu, by the sample type above); 0 when it has none.
   */
  private long timeOf(PerfRecord r) {
    byte[] body = r.body();
    ByteBuffer b = r.buffer().order(ByteOrder.LITTLE_ENDIAN);
    return switch (r.type()) {
      // sample: ip (8), pid/tid (8), time (8)
      case PerfConstants.RECORD_SAMPLE -> body.length >= 24 ? b.getLong(16) : 0;
      case PerfConstants.RECORD_FORK, PerfConstants.RECORD_EXIT ->
          body.length >= 24 ? b.getLong(16) : 0;
      default -> body.length >= 16 ? b.getLong(body.length - 16) : 0;
    };
  }

  @Override
  public void select(int pid, boolean followChildren) {
    selected.add(pid);
    if (followChildren) {
      followed.add(pid);
    }
  }

  @Override
  public void deselect(int pid) {
    selected.remove(pid);
    followed.remove(pid);
  }

  /** No program runs at the tick: the walk reads what the copy lacks from the live process. */
  @Override
  public ProcessTicks.PlanSlots planSlots() {
    return ProcessTicks.PlanSlots.NONE;
  }

  @Override
  public Map<String, Long> counters() {
    return Map.copyOf(counters);
  }

  private void count(String name, long n) {
    counters.merge(name, n, Long::sum);
  }

  @Override
  public void close() {
    for (Cpu c : cpus) {
      closeQuietly(c.event());
    }
    cpus.clear();
  }

  private static void closeQuietly(PerfEvent event) {
    try {
      event.close();
    } catch (SyscallException e) {
      // close(2) of a perf fd only fails for a bad fd; nothing is left to release
    }
  }
}
