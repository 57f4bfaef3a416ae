package dev.polystack.host.probes;

import dev.polystack.host.memory.PluginMemory;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.ptrace.Ptrace;
import dev.polystack.host.ptrace.PtraceConstants;
import dev.polystack.host.ptrace.SigInfo;
import dev.polystack.host.ptrace.TraceEvent;
import dev.polystack.host.ptrace.TraceeControl;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.TracerWakeup;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sampling.RegisterConversion;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.Syscalls;
import dev.polystack.otel.counters.TraceCounters;
import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.ProbeHit;
import dev.polystack.plugin.api.ProbeSite;
import dev.polystack.plugin.api.Registers;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Exact probes: every thread is seized, and each breakpoint is a perf event with {@code sigtrap}
 * that makes the thread raise a synchronous SIGTRAP (si_code TRAP_PERF) at the hit. We see it as
 * a signal-delivery stop, read registers and memory of the stopped thread, arm the return site
 * before the call can return, and resume with the signal suppressed. The breakpoints belong to
 * our file descriptors, so they die with polystack; the kernel resumes over an execution
 * breakpoint by itself (it sets RF). The target's own signals, SIGTRAP included, are delivered
 * unchanged, and job control works through PTRACE_LISTEN ({@link TraceeControl} passes every
 * event on; this backend adds, through its hooks, the arming of threads and processes as they
 * appear and the suppression of its own SIGTRAPs).
 *
 * <p>All ptrace traffic runs on the {@link Tracer}'s thread: {@link #run} occupies it.
 */
public final class PtraceProbeBackend implements ProbeBackend {
  /** si_code of a SIGTRAP raised by a perf event with sigtrap set. */
  static final int TRAP_PERF = 6;

  private final VdsoResolver resolver;
  private final Tracer tracer;
  private final ProcFs proc;
  private final int slots;
  private final boolean followForks;
  private final boolean launched;
  private final Map<Integer, Breakpoints> threads = new HashMap<>();
  private final Map<Integer, Integer> processOf = new HashMap<>();
  private final Map<Integer, ResolvedPlan> plans = new HashMap<>();
  private final Map<Integer, PluginMemory> memories = new HashMap<>();
  private HitListener listener;
  private int pid;
  private TraceeControl control;

  /**
   * @param launched the target was launched and sits in its exec stop, already seized
   */
  public PtraceProbeBackend(VdsoResolver resolver, Tracer tracer, ProcFs proc, int slots,
      boolean followForks, boolean launched) {
    this.resolver = resolver;
    this.tracer = tracer;
    this.proc = proc;
    this.slots = slots;
    this.followForks = followForks;
    this.launched = launched;
  }

  /** The leader's exit status once the process is gone, else null. */
  public WaitStatus exit() {
    return control == null ? null : control.exit();
  }

  @Override
  public End run(ResolvedPlan plan, HitListener hits, BooleanSupplier stop, long deadlineNanos)
      throws ProbeException {
    this.listener = hits;
    this.pid = plan.pid();
    this.control = new TraceeControl(proc, pid, TraceeControl.options(followForks), new Hooks());
    plans.put(pid, plan);
    try {
      return tracer.call(p -> {
        try {
          return loop(p, stop, deadlineNanos);
        } finally {
          release(p);
        }
      });
    } catch (SyscallException e) {
      throw new ProbeException("tracing process " + pid + " failed: " + e.getMessage());
    }
  }

  private End loop(Ptrace p, BooleanSupplier stop, long deadline) throws SyscallException {
    if (launched) {
      arm(p, pid, pid);
      p.cont(pid, 0); // out of its exec stop
    } else {
      control.seizeAll(p); // none seized: the process is gone, which serve reports
    }
    Optional<TracerWakeup> wakeup = TracerWakeup.start();
    try {
      return serve(p, stop, deadline, wakeup.isPresent());
    } finally {
      wakeup.ifPresent(TracerWakeup::close);
    }
  }

  /**
   * Handles reports until the end. With {@code blocking}, sleeps in waitpid between reports (the
   * wake-up timer bounds how late a stop request or the deadline is seen); otherwise polls, with
   * pauses that grow while the target makes no call.
   */
  private End serve(Ptrace p, BooleanSupplier stop, long deadline, boolean blocking)
      throws SyscallException {
    long idleSince = System.nanoTime();
    while (true) {
      if (stop.getAsBoolean()) {
        return End.STOPPED;
      }
      TraceEvent e = p.nextEvent();
      if (e != null) {
        control.handle(p, e);
        idleSince = System.nanoTime();
        continue;
      }
      if (control.gone(p)) {
        return End.TARGET_EXITED;
      }
      long now = System.nanoTime();
      if (now >= deadline) {
        return End.DEADLINE;
      }
      if (blocking) {
        // Right after a stop the next report (the call's return, the next call) is usually
        // microseconds away: poll for it a little before sleeping (see Ptrace#SPIN_ALLOWED).
        // Returns at once if a report is already there: one waitpid per stop.
        p.awaitAny(Math.max(0, REPORT_SPIN_NANOS - (now - idleSince)));
      } else if (p.reapAll() == 0) {
        LockSupport.parkNanos(Math.max(20_000, Math.min(1_000_000, (now - idleSince) / 4)));
      }
    }
  }

  /**
   * How long after the last report the wait keeps polling before it sleeps: covers the trap of
   * a return breakpoint and a program that calls again right away, not a program that pauses.
   */
  static final long REPORT_SPIN_NANOS = 250_000;

  private void arm(Ptrace p, int tid, int process) throws SyscallException {
    processOf.put(tid, process);
    ResolvedPlan plan = plans.get(process);
    if (plan == null || threads.containsKey(tid)) {
      return;
    }
    try {
      threads.put(tid, Breakpoints.arm(tid, plan, slots, PtraceProbeBackend::attr, -1));
    } catch (SyscallException e) {
      if (e.errno() != Errno.ESRCH) {
        listener.count(TraceCounters.THREAD_NOT_ARMED, 1);
      }
    }
  }

  static dev.polystack.host.perf.PerfEventAttr attr(long address) {
    // No ring: the SIGTRAP is the whole report, and the stopped thread is read directly.
    return Breakpoints.base(address).sigtrap(true).sigData(address).build();
  }

  /** What this backend adds to passing events on. */
  private final class Hooks implements TraceeControl.Hooks {
    @Override
    public void seized(Ptrace p, int tid) throws SyscallException {
      arm(p, tid, pid);
    }

    @Override
    public void stopped(Ptrace p, int tid) throws SyscallException {
      if (!processOf.containsKey(tid)) {
        int process = processOfNew(tid);
        if (!plans.containsKey(process)) {
          // A fork child's first stop can be reported before its parent's fork event; resumed
          // unarmed, the child would make its calls untraced. It is a copy of its parent.
          inherit(process, parentOf(process));
        }
        arm(p, tid, process);
      }
    }

    @Override
    public void exited(int tid) {
      forget(tid);
    }

    @Override
    public void goneInStop(int tid) {
      listener.count(TraceCounters.THREAD_GONE, 1);
    }

    @Override
    public void execed(Ptrace p, int tid) throws SyscallException {
      exec(p, tid);
    }

    @Override
    public void spawned(Ptrace p, int tid, int event) throws SyscallException {
      int child = (int) p.getEventMsg(tid);
      int parent = processOf.getOrDefault(tid, pid);
      int process = event == PtraceConstants.EVENT_CLONE ? processOfNew(child) : child;
      if (process != parent && !plans.containsKey(process)) {
        inherit(process, parent);
      }
      processOf.put(child, process);
      arm(p, child, process);
    }

    @Override
    public boolean raisesTraps() {
      return true;
    }

    @Override
    public Runnable trapped(Ptrace p, int tid) throws SyscallException {
      if (perfTrap(p, tid)) {
        ProbeHit entry = hit(p, tid);
        return () -> { // after the resume, the SIGTRAP suppressed: it was ours
          if (entry != null) {
            listener.hit(entry);
          }
          listener.afterResume();
        };
      }
      if (spuriousTrap(p, tid)) {
        listener.count(TraceCounters.SPURIOUS_SIGTRAP, 1);
        return NOTHING; // the breakpoint re-fires when the instruction runs again
      }
      return null;
    }

    @Override
    public boolean ownTrap(Ptrace p, int tid) throws SyscallException {
      return perfTrap(p, tid) || spuriousTrap(p, tid);
    }
  }

  private static final Runnable NOTHING = () -> { };

  /** A new process starts as a copy of its parent: the same vDSO at the same address. */
  private void inherit(int process, int parent) {
    ResolvedPlan pp = plans.get(parent);
    if (pp != null) {
      plans.put(process, new ResolvedPlan(process, pp.vdsoBase(), pp.bias(), pp.plan(),
          pp.entries()));
    }
  }

  private int parentOf(int process) {
    try {
      return proc.forPid(process).status().ppid();
    } catch (ProcReadException e) {
      return -1;
    }
  }

  private int processOfNew(int tid) {
    try {
      return proc.forPid(tid).status().tgid();
    } catch (ProcReadException e) {
      return pid;
    }
  }

  /** si_code of a SIGTRAP the kernel raises for a #DB whose DR6 names no cause (icebp). */
  static final int TRAP_BRKPT = 1;

  /**
   * A SIGTRAP our breakpoint caused without the perf event seeing it: on some VMs (measured on
   * this 2-vCPU guest, docs/vdso.md) a breakpoint's #DB occasionally arrives with DR6 reading 0,
   * which the kernel takes for an icebp and answers with SIGTRAP (TRAP_BRKPT) at the
   * breakpoint's own address. Delivered, it would kill a target that never asked for it. Only
   * an address where this thread has a breakpoint counts; an int1 in the target's own code
   * reports the address after it, and int3 reports SI_KERNEL.
   */
  private boolean spuriousTrap(Ptrace p, int tid) throws SyscallException {
    SigInfo si = p.getSigInfo(tid);
    Breakpoints b = threads.get(tid);
    ResolvedPlan plan = plans.get(processOf.getOrDefault(tid, pid));
    return si.signo() == Syscalls.SIGTRAP && si.code() == TRAP_BRKPT
        && (b != null && (b.entryAt(si.addr()) != null || b.watchesReturn(si.addr()))
            || plan != null && plan.entries().containsKey(si.addr()));
  }

  private static boolean perfTrap(Ptrace p, int tid) throws SyscallException {
    SigInfo si = p.getSigInfo(tid);
    return si.signo() == Syscalls.SIGTRAP && si.code() == TRAP_PERF;
  }

  /**
   * Reads a stopped thread at a hit. The target waits for all of it, so it does only what needs
   * the thread stopped: at an entry, the return address (and its breakpoint, before the call can
   * return); at a return, the monitor, which reads the outputs. An entry's registers and return
   * address are all a monitor needs of it, so the entry hit is returned to be delivered after
   * the resume, without memory: the monitor's work then overlaps the target's run.
   *
   * @return the entry hit to deliver after the resume, or null
   */
  private ProbeHit hit(Ptrace p, int tid) throws SyscallException {
    long now = System.nanoTime();
    Registers regs = RegisterConversion.of(p.getRegs(tid));
    int process = processOf.getOrDefault(tid, pid);
    PluginMemory memory = memories.computeIfAbsent(process,
        k -> new PluginMemory(ProcessMemory.of(k)));
    Breakpoints b = threads.get(tid);
    ProbeSite entry = b == null ? null : b.entryAt(regs.pc());
    byte[] stack = new byte[0];
    if (entry != null) {
      try {
        stack = memory.readFully(regs.sp(), 8);
        place(b, regs.pc(), Bytes.getLong(stack, 0)); // the entry slot sits at the live address
      } catch (MemoryReadException ex) {
        listener.count(TraceCounters.UNREADABLE_RETURN_ADDRESS, 1);
      }
    }
    if (entry != null) {
      return new ProbeHit(entry, process, tid, now, regs, stack, null);
    }
    ProbeSite site = new ProbeSite("", "", regs.pc(), ProbeSite.Kind.RETURN);
    listener.hit(new ProbeHit(site, process, tid, now, regs, stack, memory));
    if (b != null) {
      try {
        b.returned(regs.pc()); // a lent entry slot goes back before the thread runs on
      } catch (SyscallException e) {
        listener.count(TraceCounters.ENTRY_SLOT_NOT_RESTORED, 1);
      }
    }
    return null;
  }

  /**
   * Watches the call's return: the thread is stopped, so one slot can serve every function's
   * return, and a function's own entry slot can be lent while the thread is inside it.
   */
  private void place(Breakpoints b, long entry, long returnAddress) {
    try {
      switch (b.enter(entry, returnAddress)) {
        case RETARGETED -> listener.count(TraceCounters.RETURN_SLOT_RETARGETED, 1);
        case NO_SLOT -> listener.count(TraceCounters.NO_RETURN_SLOT, 1);
        default -> { }
      }
    } catch (SyscallException e) {
      listener.count(TraceCounters.RETURN_SLOT_FAILED, 1);
    }
  }

  /** A process exec'd (from any of its threads): its old breakpoints are gone with its image. */
  private void exec(Ptrace p, int tid) throws SyscallException {
    int former = (int) p.getEventMsg(tid);
    int process = processOf.getOrDefault(tid, tid);
    for (Map.Entry<Integer, Integer> en : List.copyOf(processOf.entrySet())) {
      if (en.getValue() == process && threads.containsKey(en.getKey())) {
        threads.remove(en.getKey()).close();
        listener.threadExited(en.getKey());
      }
    }
    if (former != tid) {
      processOf.remove(former);
    }
    memories.remove(process);
    try {
      ResolvedPlan plan = resolver.resolve(tid);
      plans.put(process, plan);
      listener.planChanged(plan);
      arm(p, tid, process);
    } catch (ProbeException e) {
      plans.remove(process);
      listener.count(TraceCounters.EXEC_NOT_RESOLVED, 1);
    }
  }

  private void forget(int tid) {
    Breakpoints b = threads.remove(tid);
    if (b != null) {
      b.close();
    }
    processOf.remove(tid);
    listener.threadExited(tid);
  }

  /**
   * Disarms, then detaches every thread ({@link TraceeControl#detachAll} lets a thread with a
   * SIGTRAP of ours still queued run into its stop first, and suppresses it).
   */
  private void release(Ptrace p) {
    for (Breakpoints b : threads.values()) {
      b.close();
    }
    threads.clear();
    int failed = control.detachAll(p);
    if (failed > 0) {
      listener.count(TraceCounters.DETACH_FAILED, failed);
    }
  }
}
