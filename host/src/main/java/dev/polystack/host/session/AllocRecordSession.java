package dev.polystack.host.session;

import dev.polystack.host.alloc.AllocationTable;
import dev.polystack.host.alloc.AllocatorSites;
import dev.polystack.host.alloc.ByteSampling;
import dev.polystack.host.bpf.AllocationProbes;
import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.monitor.ProbeSite;
import dev.polystack.host.monitor.ProbeSites;
import dev.polystack.host.monitor.SiteSpec;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sampling.nostop.AllocSampler;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.ValueType;
import dev.polystack.plugin.api.Frame;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * {@code record --event alloc --pid PID}: the target's allocations sampled by bytes in the
 * kernel (uprobe sessions on its C library's allocator), as a recording of allocation samples:
 * one per stack, with alloc_objects, alloc_space, inuse_objects and inuse_space
 * (docs/allocations.md). The target is never stopped.
 */
public final class AllocRecordSession {
  /** The ring: sampled allocations are rare next to ticks, 8 MiB holds seconds of them. */
  static final int RING_BYTES = 8 << 20;
  private static final int SIGKILL = 9;
  /** Default stack copied at a sampled allocation. */
  public static final int DEFAULT_STACK_BYTES = 8 << 10;

  /**
   * What to sample.
   *
   * @param meanBytes one sample per this many bytes on average; 0: every call
   * @param stackBytes stack copied at a sampled call
   */
  public record AllocOptions(long meanBytes, int stackBytes) {
    public AllocOptions {
      if (meanBytes < 0) {
        throw new IllegalArgumentException("--alloc-rate must be > 0 bytes: " + meanBytes);
      }
      if (stackBytes < 512 || stackBytes > TickCapture.STACK_MAX) {
        throw new IllegalArgumentException("the stack copy must be 512.." + TickCapture.STACK_MAX
            + " bytes: " + stackBytes);
      }
    }
  }

  /** The target cannot be probed (no C library): the user's input, exit 2. */
  public static final class UnprobeableTarget extends Exception {
    private static final long serialVersionUID = 1L;

    UnprobeableTarget(String message) {
      super(message);
    }
  }

  private final ProcFs proc;
  private final SamplingRun run;
  private final PluginGuard guard;
  private final Consumer<String> warn;
  /** {@code record --event calls}: the functions whose calls are sampled; empty: allocations. */
  private final List<SiteSpec> callSites;

  public AllocRecordSession(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn) {
    this(proc, plugins, guard, warn, List.of());
  }

  private AllocRecordSession(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn, List<SiteSpec> callSites) {
    this.proc = proc;
    this.warn = warn;
    this.run = new SamplingRun(proc, plugins, guard, warn);
    this.guard = guard;
    this.callSites = List.copyOf(callSites);
  }

  /**
   * {@code record --event calls}: the stacks of the calls of {@code sites} (uprobes at their
   * entries), sampled one per {@link AllocOptions#meanBytes()} calls on average (0: every call)
   * through the allocation program, each call weighing one; a sample's value is its stack's
   * estimated calls (docs/probes.md, "Stacks at the calls").
   */
  public static AllocRecordSession ofCalls(ProcFs proc, PluginRegistry plugins,
      PluginGuard guard, Consumer<String> warn, List<SiteSpec> sites) {
    if (sites.isEmpty() || sites.size() > AllocationProbes.MAX_SITES) {
      throw new IllegalArgumentException("1.." + AllocationProbes.MAX_SITES + " call sites, not "
          + sites.size());
    }
    for (SiteSpec s : sites) {
      if (s.atReturn() || s.isAddress() || s.isVdso()) {
        throw new IllegalArgumentException(s + ": a call site is MODULE:SYMBOL[+OFF]");
      }
    }
    return new AllocRecordSession(proc, plugins, guard, warn, sites);
  }

  /** Records the allocations of {@code pid} until {@code stop}, the duration or its exit. */
  public RecordSession.Result attach(int pid, SamplingOptions options, AllocOptions alloc,
      BooleanSupplier stop, RecordSession.Progress progress)
      throws SamplingException, UnprobeableTarget {
    try {
      proc.forPid(pid).status();
    } catch (ProcReadException e) {
      throw new SamplingException(e.getMessage());
    }
    try (TickCapture capture = openCapture(alloc);
        TargetExit exit = TargetExit.watch(proc, pid, null)) {
      return record(pid, capture, exit, () -> { }, options, alloc, stop, progress);
    }
  }

  /**
   * Starts {@code command} and records its allocations from its start until it exits (or
   * {@code stop}, or the duration: then it is killed). The program is held where its libraries
   * are mapped and none of its code has run (ChildLaunch.runToThreadSetup) until its allocator
   * is probed, so its first allocations are in the profile.
   *
   * @param as whose credentials the command runs with; null: polystack's
   */
  public RecordSession.Result launch(List<String> command, Credentials as,
      SamplingOptions options, AllocOptions alloc, BooleanSupplier stop,
      RecordSession.Progress progress) throws SamplingException, UnprobeableTarget {
    // Loaded before the program starts: a refusal ends the run before anything ran.
    try (TickCapture capture = openCapture(alloc)) {
      ChildProcess child = ChildLaunch.startStopped(command, as);
      try (child; Tracer tracer = Tracer.start(child.pid())) {
        ChildLaunch.runToThreadSetup(child, tracer, command);
        int pid = child.pid();
        RecordSession.Result result;
        try {
          result = record(pid, capture, TargetExit.ofChild(child), () -> tracer.detach(pid, 0),
              options, alloc, stop, progress);
        } catch (UnprobeableTarget e) {
          // Killed where it is held: a command refused for bad input runs none of its code.
          try {
            child.kill(SIGKILL);
          } catch (SyscallException kill) {
            // gone already; the child's close reaps it either way
          }
          throw e;
        }
        return result.targetExit() != null ? result : ChildLaunch.endChild(child, result);
      }
    }
  }

  /** What lets the program run once its allocator is probed. */
  private interface Release {
    void run() throws SyscallException;
  }

  private static TickCapture openCapture(AllocOptions alloc) throws SamplingException {
    String why = BpfSupport.unavailableReason().orElse(null);
    if (why != null) {
      throw new SamplingException("cannot record allocations: " + why);
    }
    try {
      TickCapture capture = TickCapture.open(SamplingOptions.DEFAULT_RATE, RING_BYTES,
          c -> { }, EnumSet.of(TickCapture.Feature.ALLOC));
      capture.allocations().configure(alloc.meanBytes(), alloc.stackBytes(),
          ByteSampling.table(alloc.meanBytes()));
      return capture;
    } catch (BpfLoadException e) {
      throw new SamplingException("cannot record allocations: " + e.getMessage());
    }
  }

  private RecordSession.Result record(int pid, TickCapture capture, TargetExit exit,
      Release release, SamplingOptions options, AllocOptions alloc, BooleanSupplier stop,
      RecordSession.Progress progress) throws SamplingException, UnprobeableTarget {
    List<Named> named = new ArrayList<>();
    String[] unprobeable = {null};
    RecordSession.Result result;
    try {
      result = run.run(pid, RecordSession.Mode.BPF.id(), options, progress,
          (t, processor, refresh) -> {
            AllocSampler.Sites sites;
            try {
              sites = callSites.isEmpty()
                  ? AllocSampler.Sites.of(AllocatorSites.of(proc, pid, t.mappings()))
                  : callSites(pid);
            } catch (AllocatorSites.SiteException e) {
              unprobeable[0] = e.getMessage();
              throw new SamplingException(e.getMessage());
            } catch (ProbeSites.SiteException e) {
              unprobeable[0] = e.getMessage();
              throw new SamplingException(e.getMessage());
            }
            StackWalker walker = new StackWalker(options.maxDepth(), guard);
            try (AllocSampler s = new AllocSampler(t, options, walker, processor, capture, sites,
                alloc.meanBytes(), guard)) {
              s.openAll();
              try {
                release.run();
              } catch (SyscallException e) {
                throw new SamplingException("cannot let process " + pid + " run: "
                    + e.getMessage());
              }
              var outcome = s.run(stop, exit);
              for (String runtime : s.runtimesWithoutAllocator()) {
                warn.accept("the " + runtime + " plug-in found no allocator function in process "
                    + pid + " (its VM was not found): the allocations of its"
                    + " runtime are not in this profile (docs/allocations.md)");
              }
              // Named before the run closes the target's modules.
              FrameNamer namer = new FrameNamer();
              for (AllocationTable.Entry<RawStack> e : s.table().entries()) {
                named.add(new Named(e.stack() == null
                    ? List.of(Frame.error("allocation_stack_lost"))
                    : namer.name(e.stack(), t.table()), e));
              }
              return outcome;
            }
          });
    } catch (SamplingException e) {
      if (unprobeable[0] != null) {
        throw new UnprobeableTarget(unprobeable[0]);
      }
      throw e;
    }
    return withValues(result, named, alloc.meanBytes(), !callSites.isEmpty());
  }

  /** The call sites in {@code pid} now, one group of uprobes per file. */
  private AllocSampler.Sites callSites(int pid) throws ProbeSites.SiteException {
    List<MemoryMapping> mappings;
    try {
      mappings = proc.forPid(pid).maps().mappings();
    } catch (ProcReadException e) {
      throw new ProbeSites.SiteException("cannot read the mappings of process " + pid + " ("
          + e.getMessage() + ")");
    }
    List<ProbeSite> sites = ProbeSites.resolve(proc.root(), pid, mappings, callSites);
    Map<java.nio.file.Path, List<Integer>> byFile = new LinkedHashMap<>();
    for (int i = 0; i < sites.size(); i++) {
      ProbeSite s = sites.get(i);
      byFile.computeIfAbsent(s.file(), f -> new ArrayList<>()).add(i);
    }
    List<AllocSampler.Group> groups = new ArrayList<>();
    byFile.forEach((file, indexes) -> groups.add(new AllocSampler.Group(file,
        indexes.stream().mapToLong(i -> sites.get(i).fileOffset()).toArray(),
        indexes.stream().mapToLong(Integer::longValue).toArray())));
    return new AllocSampler.Sites(java.util.Collections.nCopies(sites.size(),
        AllocationProbes.Kind.CALL), groups, List.of(), List.of(), false);
  }

  /** A stack as named while the target's modules were open, and its totals. */
  private record Named(List<Frame> frames, AllocationTable.Entry<RawStack> entry) {}

  /**
   * The run's recording with one sample per stack in place of CPU samples: its four allocation
   * values, or (a calls record, each call weighing one) its calls.
   */
  private static RecordSession.Result withValues(RecordSession.Result result,
      List<Named> named, long mean, boolean calls) {
    Recording r = result.recording();
    List<Sample> samples = new ArrayList<>();
    for (Named n : named) {
      long[] values = n.entry().totals().rounded();
      if (values[0] == 0 && values[1] == 0) {
        continue;
      }
      samples.add(new Sample(n.entry().tid(), "", r.endEpochNanos(),
          new StackTrace(n.frames()), Map.of(), 1, 1,
          calls ? new long[] {values[0]} : values));
    }
    // The period pprof shows: bytes (or calls) between samples, 1 when every call is sampled.
    Recording out = calls
        ? new Recording(r.target(), r.startEpochNanos(), r.endEpochNanos(), Math.max(1, mean),
            "bpf-calls", r.modules(), samples, r.losses(), List.of(ValueType.CALLS), 0)
        : new Recording(r.target(), r.startEpochNanos(), r.endEpochNanos(), Math.max(1, mean),
            "bpf-alloc", r.modules(), samples, r.losses(), ValueType.ALLOCATIONS, 1);
    RecordSession.Summary s = result.summary();
    RecordSession.Summary summary = new RecordSession.Summary(samples.size(), samples.size(),
        s.threads(), s.errors(), s.losses(), 0, 0, 0, 0, 0, 0);
    return new RecordSession.Result(out, summary, result.targetExit(), result.stoppedByUser(),
        result.targetGone());
  }
}
