package dev.polystack.host.session;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ThreadState;
import dev.polystack.host.process.LoadedModule;
import dev.polystack.host.process.RuntimeBinding;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.ptrace.Ptrace;
import dev.polystack.host.ptrace.TraceEvent;
import dev.polystack.host.ptrace.TraceeControl;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sampling.CapturedThread;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.RegisterConversion;
import dev.polystack.host.sampling.SampleMemory;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackCapture;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.ptrace.PtraceSampler;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.plugin.api.DiscoveredOffset;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.Registers;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * {@code dump}: one consistent snapshot of every thread. All threads are stopped together, read,
 * and resumed together, so the stacks show one instant; then polystack detaches.
 */
public final class DumpSession {

  /** One thread of the snapshot; {@code state} was read from /proc before anything stopped. */
  public record ThreadDump(int tid, String name, String state, List<Frame> frames) {}

  /** The snapshot, with the modules needed to label native frames. */
  public record Dump(int pid, List<ThreadDump> threads, List<ModuleInfo> modules,
      Map<String, Long> losses) {}

  static final long STOP_TIMEOUT_NANOS = 200_000_000L;

  private final ProcFs proc;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;

  public DumpSession(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn) {
    this.proc = proc;
    this.plugins = plugins;
    this.guard = guard;
    this.warn = warn;
  }

  /**
   * Takes up to {@code snapshots} snapshots, a few milliseconds apart, until every attached
   * plug-in instance reports values it validated against the process; returns them by module.
   * Each snapshot stops the threads as briefly as {@code dump} does.
   */
  public Map<String, List<DiscoveredOffset>> validateOffsets(int pid, int snapshots)
      throws SamplingException {
    PtraceSession.checkAttachable(proc, pid);
    TargetProcess target = new TargetProcess(pid, proc, new ModuleOpener(), ProcessMemory.of(pid),
        plugins, guard, warn);
    try {
      target.refresh();
    } catch (ProcReadException e) {
      throw new SamplingException("cannot read process " + pid + ": " + e.getMessage());
    }
    StackWalker walker = new StackWalker(SamplingOptions.DEFAULT_MAX_DEPTH, guard);
    Map<String, List<DiscoveredOffset>> found = new LinkedHashMap<>();
    try (Tracer tracer = Tracer.start(pid)) {
      for (int i = 0; i < snapshots; i++) {
        tracer.call(p -> {
          snapshot(p, pid, target, (tid, t) -> walkStopped(p, tid, t, t.hostMemory(), walker,
              SamplingOptions.DEFAULT_STACK_BYTES, Hook.NONE), new LinkedHashMap<>(),
              new LinkedHashMap<>(), new LinkedHashMap<>());
          return null;
        });
        try {
          target.refresh(); // lets plug-ins read what the snapshot located (e.g. JIT traces)
        } catch (ProcReadException e) {
          throw new SamplingException("process " + pid + " went away: " + e.getMessage());
        }
        found.clear();
        boolean all = true;
        for (RuntimeBinding b : target.table().bindings()) {
          List<DiscoveredOffset> v = guard.call(b.plugin(), "validatedOffsets",
              b.instance()::validatedOffsets).orElse(List.of());
          all &= !v.isEmpty();
          found.computeIfAbsent(b.module(), k -> new ArrayList<>()).addAll(v);
        }
        if (all) {
          break;
        }
        Thread.sleep(20);
      }
    } catch (SyscallException e) {
      throw new SamplingException("cannot inspect process " + pid + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      target.close();
    }
    return found;
  }

  /**
   * Lets a snapshot watch a dump: it may wrap the memory the host and each thread's walk read,
   * and sees the target after the walk, before it is closed.
   */
  interface Hook {
    Hook NONE = new Hook() {};

    default ProcessMemory process(ProcessMemory live) {
      return live;
    }

    /** @param threadPointer the thread's FS base when it stopped */
    default dev.polystack.plugin.api.RemoteMemory thread(int tid, Registers registers,
        long threadPointer, dev.polystack.plugin.api.RemoteMemory live) {
      return live;
    }

    /** @param losses what the session itself lost (plug-in counters not included) */
    default void walked(TargetProcess target, Map<String, Long> losses) {}
  }

  public Dump dump(int pid, int maxDepth) throws SamplingException {
    return dump(pid, maxDepth, Hook.NONE);
  }

  Dump dump(int pid, int maxDepth, Hook hook) throws SamplingException {
    PtraceSession.checkAttachable(proc, pid);
    ProcessMemory live = ProcessMemory.of(pid);
    TargetProcess target = new TargetProcess(pid, proc, new ModuleOpener(), hook.process(live),
        plugins, guard, warn);
    try {
      target.refresh();
    } catch (ProcReadException e) {
      throw new SamplingException("cannot read process " + pid + ": " + e.getMessage());
    }
    StackWalker walker = new StackWalker(maxDepth, guard);
    Map<Integer, RawStack> raw = new LinkedHashMap<>();
    Map<Integer, String> states = new LinkedHashMap<>();
    Map<String, Long> losses = new LinkedHashMap<>();
    try (Tracer tracer = Tracer.start(pid)) {
      tracer.call(p -> {
        snapshot(p, pid, target, (tid, t) -> walkStopped(p, tid, t, live, walker,
            SamplingOptions.DEFAULT_STACK_BYTES, hook), raw, states, losses);
        return null;
      });
    } catch (SyscallException e) {
      target.close();
      throw new SamplingException("cannot dump process " + pid + ": " + e.getMessage());
    }
    hook.walked(target, Map.copyOf(losses));
    return finish(pid, raw, tid -> {
      try {
        return proc.forPid(pid).threadName(tid);
      } catch (ProcReadException ex) {
        return "";
      }
    }, states, target, losses);
  }

  /** Names frames and threads and collects counters, the same way live and replayed. */
  static Dump finish(int pid, Map<Integer, RawStack> raw,
      java.util.function.IntFunction<String> names, Map<Integer, String> states,
      TargetProcess target, Map<String, Long> losses) {
    FrameNamer namer = new FrameNamer();
    List<ThreadDump> threads = new ArrayList<>();
    for (var e : raw.entrySet()) {
      threads.add(new ThreadDump(e.getKey(), names.apply(e.getKey()),
          states.getOrDefault(e.getKey(), "?"), namer.name(e.getValue(), target.table())));
    }
    List<ModuleInfo> modules = new ArrayList<>();
    for (LoadedModule m : target.table().modules()) {
      modules.add(new ModuleInfo(m.start(), m.end(), m.fileOffset(), m.path(), m.buildId()));
    }
    target.getAndResetCounters().forEach((k, v) -> losses.merge(k, v, Long::sum));
    target.close();
    return new Dump(pid, threads, modules, losses);
  }

  /**
   * Reads registers and walks the stack of a thread that is in a ptrace-stop, reading through
   * {@code live} and letting {@code hook} wrap the thread's memory (snapshots record what the
   * walk reads). Everything happens while the thread is stopped: dump and snapshot stop all
   * threads together and want one instant for all of them.
   */
  private static RawStack walkStopped(Ptrace p, int tid, TargetProcess target, ProcessMemory live,
      StackWalker walker, int stackBytes, Hook hook) throws SyscallException {
    var user = p.getRegs(tid);
    var regs = RegisterConversion.of(user);
    StackCapture copy = new StackCapture(live, stackBytes);
    copy.copy(regs.sp());
    SampleMemory memory = copy.memory(live);
    CapturedThread thread = new CapturedThread(target.pid(), tid, regs,
        hook.thread(tid, regs, user.fsBase(), memory), copy.start(), copy.length(),
        user.fsBase(), CapturedThread.NO_PLANS);
    return walker.walk(thread, target.table());
  }

  private interface ThreadWalk {
    RawStack walk(int tid, TargetProcess target) throws SyscallException;
  }

  private void snapshot(Ptrace p, int pid, TargetProcess target, ThreadWalk walk,
      Map<Integer, RawStack> raw, Map<Integer, String> states, Map<String, Long> losses)
      throws SyscallException {
    TraceeControl control = new TraceeControl(proc, pid, PtraceSampler.OPTIONS,
        TraceeControl.Hooks.NONE);
    try {
      if (!control.seizeAll(p)) {
        throw TraceeControl.processGone(pid);
      }
      List<Integer> tids = new ArrayList<>(p.tracedThreads());
      for (int tid : tids) {
        states.put(tid, state(pid, tid));
      }
      List<Integer> stopped = new ArrayList<>();
      for (int tid : tids) {
        try {
          p.interrupt(tid);
        } catch (SyscallException e) {
          losses.merge(HostCounters.THREAD_GONE.name(), 1L, Long::sum);
        }
      }
      for (int tid : tids) {
        WaitStatus st = p.awaitStop(tid, STOP_TIMEOUT_NANOS);
        if (st == null) {
          losses.merge(HostCounters.STOP_TIMEOUT.name(), 1L, Long::sum);
          continue;
        }
        TraceEvent event = p.takeEvent(tid);
        if (event != null && TraceeControl.isInterruptStop(event.status())) {
          stopped.add(tid);
        } else if (event != null) {
          control.handle(p, event);
          losses.merge(HostCounters.RACED_EVENT.name(), 1L, Long::sum);
        }
      }
      try {
        for (int tid : stopped) {
          raw.put(tid, walk.walk(tid, target));
        }
      } finally {
        for (int tid : stopped) {
          control.resume(p, tid, 0);
        }
      }
      control.drain(p);
    } finally {
      int failed = control.detachAll(p);
      if (failed > 0) {
        losses.merge(HostCounters.DETACH_FAILED.name(), (long) failed, Long::sum);
      }
    }
  }

  private String state(int pid, int tid) {
    try {
      ThreadState s = proc.forPid(pid).taskStat(tid).state();
      return s.name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ');
    } catch (ProcReadException e) {
      return "gone";
    }
  }
}
