package dev.polystack.host.probes;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.VdsoTrace;
import dev.polystack.host.perf.PerfEvent;
import dev.polystack.host.perf.PerfEventAttr;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.counters.TraceCounters;
import dev.polystack.plugin.api.ProbeExit;
import dev.polystack.plugin.api.ProbeHit;
import dev.polystack.plugin.api.ProbeSite;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * Probes without stops, paired in the kernel: an execution breakpoint at each planned entry and
 * at each of the function's own ret instructions (fixed addresses from the plug-in's plan), each
 * with the BPF handler of {@link VdsoTrace}, opened with {@code inherit} on every thread that
 * exists at the start. Threads created later (and, with forks followed, children) inherit the
 * breakpoints from their first instruction: no /proc re-scan, no first call missed, and the
 * first call from every call site is complete because no return site has to be learned. The
 * handler emits one complete call per return; this class turns it into the entry and return
 * hits the plug-in's monitor pairs, so decoding stays the plug-in's.
 *
 * <p>The breakpoints belong to polystack's file descriptors: when polystack dies, even by
 * SIGKILL, the kernel closes them with their inherited copies, and the target, never stopped
 * and never traced, runs on untraced.
 */
public final class BpfProbeBackend implements ProbeBackend {
  static final long RESCAN_NANOS = 100_000_000L;
  static final int POLL_MILLIS = 10;
  /** Calls in flight at once, over every thread; an entry beyond it is counted and lost. */
  public static final int PENDING = 16384;
  /** 4 MiB: ~17000 calls of 248 bytes, many polls' worth of back-to-back calls. */
  public static final int RING_BYTES = 4 << 20;

  private static final Register[] ARGUMENTS = {
    Register.RDI, Register.RSI, Register.RDX, Register.RCX, Register.R8, Register.R9
  };

  private final VdsoResolver resolver;
  private final TargetExit exit;
  private final VdsoTrace trace;
  private final boolean followForks;
  private final Map<Integer, List<PerfEvent>> threads = new LinkedHashMap<>();
  private final Set<Integer> refused = new HashSet<>();
  private final Set<Integer> watched = new HashSet<>();
  private final Map<Long, ProbeSite> entrySites = new HashMap<>();
  private ResolvedPlan plan;
  private HitListener listener;
  private Map<String, Long> reported = Map.of();
  private long execsSeen;

  /**
   * @param trace the loaded program; this backend closes it at the end of {@link #run}
   * @param exit tells when the target is gone
   */
  public BpfProbeBackend(VdsoResolver resolver, TargetExit exit, VdsoTrace trace,
      boolean followForks) {
    this.resolver = resolver;
    this.exit = exit;
    this.trace = trace;
    this.followForks = followForks;
  }

  static PerfEventAttr attr(long address, boolean followForks) {
    // No ring and no signal: the BPF handler is the whole report. inherit covers threads made
    // later; inherit_thread keeps fork children out unless they are followed.
    return Breakpoints.base(address).inherit(true).inheritThread(!followForks).build();
  }

  /**
   * Declares the plan's sites and opens the breakpoints of every thread; the caller may then let
   * a launched target go. Fails with one clear line when not even one thread can be armed.
   */
  public void armAll(ResolvedPlan resolved) throws ProbeException {
    this.plan = resolved;
    declare(resolved);
    watch(resolved.pid());
    // Re-listed until stable: a thread created by one that was not armed yet inherits nothing.
    for (int round = 0; round < 20; round++) {
      boolean fresh = false;
      for (int tid : ProcFs.system().forPid(resolved.pid()).taskIdsOrEmpty()) {
        if (threads.containsKey(tid) || refused.contains(tid)) {
          continue;
        }
        fresh = true;
        try {
          arm(tid);
        } catch (SyscallException e) {
          if (e.errno() != Errno.ESRCH) {
            closeAll();
            throw new ProbeException("cannot arm breakpoints in process " + resolved.pid()
                + ": " + e.getMessage() + (e.errno() == Errno.ENOSPC ? " (a debugger may hold"
                + " the debug registers; detach it)" : ""));
          }
        } catch (BpfLoadException e) {
          closeAll();
          throw new ProbeException(e.getMessage());
        }
      }
      if (!fresh) {
        break;
      }
    }
    if (threads.isEmpty()) {
      throw new ProbeException("process " + resolved.pid() + " has no thread left to trace");
    }
  }

  /** Counts the spurious SIGTRAPs of a traced process (see vdso_trace.bpf.c, vdso_sigtrap). */
  private void watch(int tgid) {
    if (watched.size() < 1024 && watched.add(tgid)) {
      trace.watchSignals(tgid);
    }
  }

  /** Puts the plan's entry and ret addresses, with what to copy, into the program's sites. */
  private void declare(ResolvedPlan resolved) throws ProbeException {
    for (ProbeExit e : resolved.plan().exits()) {
      long entry = e.entry() + resolved.bias();
      ProbeSite site = resolved.entries().get(entry);
      if (site == null) {
        throw new ProbeException("the plug-in's plan has an exit for 0x"
            + Long.toHexString(e.entry()) + " but no entry site there; report this");
      }
      List<VdsoTrace.Copy> copies = new ArrayList<>();
      for (ProbeExit.OutputCopy c : e.outputs()) {
        int arg = List.of(ARGUMENTS).indexOf(c.address());
        if (arg < 0) {
          throw new ProbeException("the plug-in asks to copy through " + c.address()
              + ", which holds no argument; report this");
        }
        copies.add(new VdsoTrace.Copy(arg, c.length()));
      }
      trace.putSite(entry, VdsoTrace.KIND_ENTRY, entry, List.of());
      for (long ret : e.returns()) {
        trace.putSite(ret + resolved.bias(), VdsoTrace.KIND_RETURN, entry, copies);
      }
      entrySites.put(entry, site);
    }
    if (entrySites.isEmpty()) {
      throw new ProbeException("the plug-in planned no return instructions; report this");
    }
  }

  private List<Long> addresses() {
    List<Long> out = new ArrayList<>();
    for (ProbeExit e : plan.plan().exits()) {
      out.add(e.entry() + plan.bias());
      for (long ret : e.returns()) {
        out.add(ret + plan.bias());
      }
    }
    return out;
  }

  private void arm(int tid) throws SyscallException, BpfLoadException {
    List<PerfEvent> events = new ArrayList<>();
    try {
      for (long address : addresses()) {
        PerfEvent event = PerfEvent.open(attr(address, followForks), tid);
        events.add(event);
        trace.attach(event);
      }
      // Enabled only once all are attached: an entry without its returns would be unpaired.
      for (PerfEvent event : events) {
        event.enable();
      }
    } catch (SyscallException | BpfLoadException | RuntimeException e) {
      close(events);
      throw e;
    }
    threads.put(tid, events);
  }

  @Override
  public End run(ResolvedPlan resolved, HitListener hits, BooleanSupplier stop,
      long deadlineNanos) throws ProbeException {
    this.listener = hits;
    try {
      if (plan == null) {
        armAll(resolved);
      }
      long nextScan = System.nanoTime() + RESCAN_NANOS;
      while (true) {
        if (stop.getAsBoolean()) {
          return End.STOPPED;
        }
        long now = System.nanoTime();
        if (now >= deadlineNanos) {
          return End.DEADLINE;
        }
        drain((int) Math.min(POLL_MILLIS, (deadlineNanos - now + 999_999) / 1_000_000));
        // An exec removed the breakpoints: re-arm at the new vDSO now, not at the next rescan.
        long execs = trace.execs();
        if (execs != execsSeen) {
          execsSeen = execs;
          nextScan = 0;
        }
        if (System.nanoTime() >= nextScan) {
          nextScan = System.nanoTime() + RESCAN_NANOS;
          if (exit.gone()) {
            return End.TARGET_EXITED;
          }
          rescan();
        }
      }
    } finally {
      closeAll(); // the program stops running with the last breakpoint
      drain(0); // what it wrote before still counts
      long unfinished = trace.dropPending(tid -> true);
      if (unfinished > 0) {
        listener.count(TraceCounters.ENTRY_WITHOUT_RETURN, unfinished);
      }
      reportCounters();
      trace.close();
    }
  }

  /**
   * Lets go of the events of exited threads (their inherited copies die with them), counts the
   * calls they entered and never left, and re-plans after an exec (which removed the events).
   */
  private void rescan() throws ProbeException {
    OptionalLong base = resolver.base(plan.pid());
    if (base.isPresent() && base.getAsLong() != plan.vdsoBase()) {
      reResolve();
      return;
    }
    Set<Integer> live = new HashSet<>(ProcFs.system().forPid(plan.pid()).taskIdsOrEmpty());
    for (int tid : List.copyOf(threads.keySet())) {
      if (!live.contains(tid)) {
        close(threads.remove(tid));
      }
    }
    refused.retainAll(live);
    long gone = trace.dropPending(
        tid -> !Files.exists(Path.of("/proc", Integer.toString(tid))));
    if (gone > 0) {
      listener.count(TraceCounters.ENTRY_WITHOUT_RETURN, gone);
    }
    reportCounters();
  }

  private void reResolve() throws ProbeException {
    closeAll();
    refused.clear();
    try {
      plan = resolver.resolve(plan.pid());
    } catch (ProbeException e) {
      if (exit.gone()) {
        return;
      }
      throw e;
    }
    if (exit.gone()) {
      return; // the pid names another process now (identity check): never arm it
    }
    listener.planChanged(plan);
    declare(plan);
    for (int tid : ProcFs.system().forPid(plan.pid()).taskIdsOrEmpty()) {
      try {
        arm(tid);
      } catch (SyscallException | BpfLoadException e) {
        refused.add(tid);
        listener.count(TraceCounters.THREAD_NOT_ARMED, 1);
      }
    }
  }

  /** Reports the kernel's loss counters as they grow (cumulative in the kernel). */
  private void reportCounters() {
    Map<String, Long> now = trace.counters();
    for (Map.Entry<String, Long> c : now.entrySet()) {
      String key = c.getKey();
      if (key.equals("entries") || key.equals("returns") || key.equals("records")) {
        continue; // activity, not loss
      }
      long delta = c.getValue() - reported.getOrDefault(key, 0L);
      if (delta > 0) {
        listener.count(key, delta);
      }
    }
    reported = now;
  }

  private void drain(int timeoutMillis) {
    int n = trace.poll(timeoutMillis, this::call);
    if (n > 0) {
      listener.afterResume();
    }
  }

  /** One complete call (struct call of vdso_trace.bpf.c) as an entry hit and a return hit. */
  private void call(ByteBuffer raw) {
    if (raw.remaining() < VdsoTrace.RECORD_BYTES) {
      listener.count(TraceCounters.MALFORMED_RECORD, 1);
      return;
    }
    ByteBuffer b = raw.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int tgid = b.getInt(0);
    int tid = b.getInt(4);
    long entryNs = b.getLong(8);
    long returnNs = b.getLong(16);
    long entry = b.getLong(24);
    long[] args = new long[VdsoTrace.ARGS];
    for (int i = 0; i < args.length; i++) {
      args[i] = b.getLong(40 + 8 * i);
    }
    long rsp = b.getLong(88);
    long returnAddress = b.getLong(96);
    long rax = b.getLong(104);
    int flags = b.getInt(112);
    watch(tgid); // a followed child, from its first call on
    ProbeSite site = entrySites.get(entry);
    if (site == null) {
      listener.count(TraceCounters.MALFORMED_RECORD, 1); // not an address this session declared
      return;
    }
    long[] in = new long[Register.values().length];
    for (int i = 0; i < ARGUMENTS.length; i++) {
      in[ARGUMENTS[i].ordinal()] = args[i];
    }
    in[Register.RSP.ordinal()] = rsp;
    in[Register.RIP.ordinal()] = entry;
    byte[] stack = new byte[0];
    if ((flags & VdsoTrace.FLAG_RETURN_ADDRESS_UNREADABLE) == 0) {
      stack = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(returnAddress)
          .array();
    }
    listener.hit(new ProbeHit(site, tgid, tid, entryNs,
        Registers.of(in), stack, null));
    // As if stopped at the caller's return address, after the ret: what the monitor expects.
    long[] out = new long[Register.values().length];
    out[Register.RAX.ordinal()] = rax;
    out[Register.RSP.ordinal()] = rsp + 8;
    out[Register.RIP.ordinal()] = returnAddress;
    ProbeSite ret = new ProbeSite("", "", returnAddress, ProbeSite.Kind.RETURN);
    listener.hit(new ProbeHit(ret, tgid, tid, Math.max(entryNs, returnNs),
        Registers.of(out), new byte[0], copies(b, site, args)));
  }

  /** The bytes copied at the return, served as the caller's memory (nothing else is). */
  private CopiedMemory copies(ByteBuffer b, ProbeSite site, long[] args) {
    CopiedMemory m = new CopiedMemory();
    List<ProbeExit.OutputCopy> outputs = outputsOf(site);
    for (int i = 0; i < VdsoTrace.MAX_COPIES && i < outputs.size(); i++) {
      int len = Short.toUnsignedInt(b.getShort(116 + 2 * i));
      int arg = List.of(ARGUMENTS).indexOf(outputs.get(i).address());
      if (len > 0 && len <= VdsoTrace.COPY_MAX && arg >= 0) {
        byte[] data = new byte[len];
        b.get(120 + VdsoTrace.COPY_MAX * i, data, 0, len);
        m.put(args[arg], data);
      }
    }
    return m;
  }

  private final Map<ProbeSite, List<ProbeExit.OutputCopy>> outputs = new HashMap<>();

  private List<ProbeExit.OutputCopy> outputsOf(ProbeSite site) {
    return outputs.computeIfAbsent(site, s -> {
      for (ProbeExit e : plan.plan().exits()) {
        if (e.entry() == s.address()) {
          return e.outputs();
        }
      }
      return List.of();
    });
  }

  private static void close(List<PerfEvent> events) {
    for (PerfEvent e : events) {
      try {
        e.close();
      } catch (SyscallException ignored) {
        // close(2) of a perf fd only fails for a bad fd: nothing left to release
      }
    }
  }

  private void closeAll() {
    for (List<PerfEvent> events : threads.values()) {
      close(events);
    }
    threads.clear();
  }
}
