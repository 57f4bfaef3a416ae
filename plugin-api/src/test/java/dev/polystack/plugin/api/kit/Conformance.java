package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.ApiVersion;
import dev.polystack.plugin.api.AttachException;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.Mapping;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.PlanOutcome;
import dev.polystack.plugin.api.Plugin;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.ProbePlan;
import dev.polystack.plugin.api.ProbePlanException;
import dev.polystack.plugin.api.ProbePlugin;
import dev.polystack.plugin.api.ProbeRequest;
import dev.polystack.plugin.api.ProcessContext;
import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.RemoteMemory;
import dev.polystack.plugin.api.RuntimeBinary;
import dev.polystack.plugin.api.RuntimeInstance;
import dev.polystack.plugin.api.RuntimePlugin;
import dev.polystack.plugin.api.SampleType;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.ThreadContext;
import dev.polystack.plugin.api.WalkResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.regex.Pattern;

/**
 * The plug-in author kit: conformance checks a plug-in runs in its own tests, on its own
 * recorded cases, without the host, root or the runtime at hand.
 *
 * <p>{@link #checkDescriptor()} checks identity and API compatibility. {@link #checkCase}
 * replays one {@link SnapshotCase}: it inspects the case's module files with a fresh plug-in,
 * attaches to the replayed process and walks every thread that has native frames in the
 * plug-in's code, as one sample per thread: the leaf when it is the plug-in's (and the caller its
 * {@code unwindCaller} names), and every deeper frame of the plug-in's that the stack scan of
 * {@link PlanCoverage} finds and whose walk names frames of the live stack (a stale return
 * address is left out, as the host's unwinder never hands it over), each with its segment index.
 * It then proves, for every walk:
 * <ul>
 *   <li>no exception escapes, with every single read failing in turn and truncated in turn
 *       (the first 2 000 thread reads of a walk, and process reads during attach);
 *   <li>reads, bytes and frames stay within {@link Bounds}, and every walk ends in time;
 *   <li>the same input gives the same frames (fresh instances, and the same instance again);
 *   <li>concurrent walks on one per-process instance give the frames of a single walk;
 *   <li>a fault that changes the frames says so (a failed walk or an error frame);
 *   <li>the named runtime frames are those the live walk printed when the case was recorded.
 * </ul>
 * Each check throws {@link AssertionError} naming the case, thread and injected fault.
 */
public final class Conformance {
  private static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");

  /**
   * Limits one walk must stay within.
   *
   * @param maxReads reads through the thread's memory
   * @param maxBytes bytes asked for by those reads
   * @param maxFrames frames returned
   * @param timeoutMillis wall time
   */
  public record Bounds(long maxReads, long maxBytes, int maxFrames, long timeoutMillis) {
    /** Generous for an interpreter walk (LuaJIT reads a few hundred times at depth 100). */
    public static final Bounds DEFAULT = new Bounds(20_000, 16L << 20, 4096, 10_000);

    public Bounds {
      if (maxReads <= 0 || maxBytes <= 0 || maxFrames <= 0 || timeoutMillis <= 0) {
        throw new IllegalArgumentException("bounds must be positive");
      }
    }
  }

  /**
   * What one case exercised, for the test's own assertions and its log.
   *
   * @param walks leaf walks in the baseline replay
   * @param runtimeFrames frames of the plug-in's frame type in the baseline
   * @param maxReads most reads one baseline walk made
   * @param faultsInjected replays with one injected fault
   */
  public record CaseReport(String name, int walks, int runtimeFrames, long maxReads,
      int faultsInjected, int segments) {
    /** A report that does not count segments (kit 1.7). */
    public CaseReport(String name, int walks, int runtimeFrames, long maxReads,
        int faultsInjected) {
      this(name, walks, runtimeFrames, maxReads, faultsInjected, walks);
    }
  }

  private final Supplier<? extends Plugin> factory;
  private final Bounds bounds;
  private final int maxFaultsPerMemory;
  private final int concurrency;

  private Conformance(Supplier<? extends Plugin> factory, Bounds bounds, int maxFaults,
      int concurrency) {
    this.factory = Objects.requireNonNull(factory, "factory");
    this.bounds = bounds;
    this.maxFaultsPerMemory = maxFaults;
    this.concurrency = concurrency;
  }

  /**
   * The kit for a plug-in; {@code factory} makes a fresh plug-in, as ServiceLoader does (usually
   * the no-argument constructor, e.g. {@code MyPlugin::new}).
   */
  public static Conformance of(Supplier<? extends Plugin> factory) {
    return new Conformance(factory, Bounds.DEFAULT, 2_000, 4);
  }

  public Conformance withBounds(Bounds b) {
    return new Conformance(factory, Objects.requireNonNull(b, "bounds"), maxFaultsPerMemory,
        concurrency);
  }

  /** Descriptor sanity and API compatibility with the plugin-api this kit was built with. */
  public PluginDescriptor checkDescriptor() {
    Plugin plugin = factory.get();
    try {
      plugin.getClass().getConstructor();
    } catch (NoSuchMethodException e) {
      fail(plugin.getClass().getName() + " has no public no-argument constructor;"
          + " ServiceLoader needs one");
    }
    PluginDescriptor d = plugin.descriptor();
    check(d != null, "descriptor() returned null");
    check(d.equals(plugin.descriptor()), "descriptor() changes between calls");
    check(ID.matcher(d.id()).matches(), "id '" + d.id() + "' must match " + ID.pattern());
    check(!d.version().isBlank() && !d.version().equals("unknown"),
        "version '" + d.version() + "': stamp it (PluginVersions reads plugin.properties)");
    check(!d.description().isBlank(), "description is empty; 'polystack plugins' shows it");
    check(ApiVersion.CURRENT.canLoad(d.apiVersion()), "built against plug-in API "
        + d.apiVersion() + ", which a host at API " + ApiVersion.CURRENT + " refuses");
    check(plugin instanceof RuntimePlugin || plugin instanceof ProbePlugin,
        "implements neither RuntimePlugin nor ProbePlugin: the host would never call it");
    if (plugin instanceof RuntimePlugin runtime) {
      check(d.has(Capability.DETECT), "a RuntimePlugin must declare DETECT");
      SampleType.declarationProblem(d.id(), runtime.sampleTypes()).ifPresent(problem ->
          fail(problem + "; the host refuses the plug-in"));
    }
    if (plugin instanceof ProbePlugin) {
      check(d.has(Capability.PLAN_PROBES), "a ProbePlugin must declare PLAN_PROBES");
    }
    if (d.has(Capability.WALK_FRAMES)) {
      check(plugin instanceof RuntimePlugin && !d.frameType().isEmpty(),
          "WALK_FRAMES needs a RuntimePlugin with a frame type");
    }
    return d;
  }

  /**
   * An ELF file's bytes as the kit reads them for the checks: the {@link ModuleImage} a
   * plug-in's own tests can hand to {@code inspect}, {@code plan} or {@code argumentDecoder}
   * (its symbols carry no versions).
   */
  public static ModuleImage image(String name, byte[] elf) throws ImageReadException {
    return ElfImage.parse(name, elf);
  }

  /**
   * Checks a probe plug-in on one module image it plans probes in (an ELF file's bytes, e.g.
   * the vDSO as read from a live process): it accepts the image, plans deterministically within
   * the per-thread slot budget, refuses an unknown function with {@link ProbePlanException}, and
   * never lets an unchecked exception escape on any truncated copy of the image.
   *
   * @return the number of sites the default plan arms
   */
  public int checkProbePlugin(String name, byte[] elf, int slotsPerThread) {
    check(factory.get() instanceof ProbePlugin, "checkProbePlugin needs a ProbePlugin");
    ProbePlugin plugin = (ProbePlugin) factory.get();
    ElfImage image;
    try {
      image = ElfImage.parse(name, elf);
    } catch (ImageReadException e) {
      throw new AssertionError("the kit cannot read " + name + ": " + e.getMessage(), e);
    }
    check(probeGuard(name, () -> plugin.accepts(image)), plugin.descriptor().id()
        + " does not accept " + name);
    ProbeRequest all = new ProbeRequest(List.of(), slotsPerThread);
    ProbePlan plan = probeGuard(name, () -> plan(plugin, image, all));
    check(plan != null && !plan.sites().isEmpty(), "the default plan for " + name
        + " arms nothing");
    check(plan.sites().size() <= slotsPerThread, "the plan arms " + plan.sites().size()
        + " sites with " + slotsPerThread + " slots per thread");
    check(plan.equals(probeGuard(name, () -> plan(plugin, image, all))),
        "planning twice gave two plans");
    check(probeGuard(name, () -> plugin.monitor(plan)) != null, "monitor(plan) returned null");
    try {
      plugin.plan(image, new ProbeRequest(List.of("no_such_function_in_the_kit"),
          slotsPerThread));
      fail("an unknown function was planned instead of refused with ProbePlanException");
    } catch (ProbePlanException expected) {
      check(!expected.getMessage().isBlank(), "ProbePlanException without a message");
    } catch (RuntimeException e) {
      throw new AssertionError("plan() threw " + e + " for an unknown function; throw"
          + " ProbePlanException with what exists", e);
    }
    int step = Math.max(1, elf.length / 256);
    for (int cut = 0; cut < elf.length; cut += step) {
      ElfImage part;
      try {
        part = ElfImage.parse(name + "[0.." + cut + ")", java.util.Arrays.copyOf(elf, cut));
      } catch (ImageReadException e) {
        continue;
      }
      if (probeGuard(part.name(), () -> plugin.accepts(part))) {
        probeGuard(part.name(), () -> plan(plugin, part, all));
      }
    }
    return plan.sites().size();
  }

  private static ProbePlan plan(ProbePlugin plugin, ModuleImage image, ProbeRequest request) {
    try {
      return plugin.plan(image, request);
    } catch (ProbePlanException e) {
      return null; // a refusal with a reason is a correct answer for a damaged image
    }
  }

  private static <T> T probeGuard(String image, Supplier<T> body) {
    try {
      return body.get();
    } catch (RuntimeException | StackOverflowError e) {
      throw new AssertionError(image + ": the plug-in threw " + e
          + "; a damaged image must be refused, never an exception", e);
    }
  }

  /** Replays one case with every check; see the class comment. */
  public CaseReport checkCase(SnapshotCase c) {
    check(factory.get() instanceof RuntimePlugin, "checkCase needs a RuntimePlugin");
    List<Supported> binaries = inspect(c);
    Map<Integer, List<Integer>> segments = segments(c, binaries);
    Replay base = replay(c, binaries, segments, null, null, "baseline");
    check(!base.walks().isEmpty(), c + ": no thread has a native frame in the code of "
        + descriptorId() + " that gives runtime frames (bound modules: " + base.bound()
        + "); record the case while the runtime runs, and make sure the module files are found"
        + " (embed them or pass the module store)");
    String frameType = factory.get().descriptor().frameType();
    int runtimeFrames = 0;
    long maxReads = 0;
    for (Walk w : base.walks()) {
      maxReads = Math.max(maxReads, w.reads());
      // Each named frame is in this thread's live stack, below the one before it.
      List<String> live = LiveStacks.thread(c.liveStacks(), w.tid());
      int at = -1;
      for (Frame f : w.frames()) {
        if (f.type().equals(frameType)) {
          runtimeFrames++;
          if (!f.function().isEmpty() && !c.liveStacks().isEmpty()) {
            int found = LiveStacks.find(live, at + 1, f);
            check(found >= 0, c + " thread " + w.tid() + ": frame '" + f.function() + "' ("
                + f.file() + ":" + f.line() + ") is not in that thread's live stack below the"
                + " frame before it: " + live);
            at = found;
          }
        }
      }
    }
    check(runtimeFrames > 0, c + ": the walks returned no " + frameType + " frames");

    Replay again = replay(c, inspect(c), segments, null, null, "determinism");
    check(again.outcomes().equals(base.outcomes()), c + ": the same snapshot gave other frames"
        + " on a fresh instance:\n" + base.outcomes() + "\n" + again.outcomes());
    check(again.rewalk().equals(base.outcomes()), c + ": a second walk on the same instance"
        + " gave other frames:\n" + base.outcomes() + "\n" + again.rewalk());

    concurrent(c, binaries, segments, base);

    int injected = 0;
    for (Walk w : base.walks()) {
      int n = (int) Math.min(w.reads(), maxFaultsPerMemory);
      for (int i = 0; i < n; i++) {
        for (ReadFault f : List.of(ReadFault.fail(i), ReadFault.truncate(i, 3))) {
          Replay r = replay(c, binaries, segments, new ThreadFault(w.tid(), f), null,
              "thread " + w.tid() + " " + f);
          injected++;
          check(r.faultHit(), c + " thread " + w.tid() + ": " + f + " was never reached");
          Walk got = r.walk(w.tid());
          if (got != null && f.fails() && !got.outcome().equals(w.outcome())) {
            check(got.failedOrErrorFrame(), c + " thread " + w.tid() + ": with " + f
                + " the frames changed without an error frame or failed walk:\n" + w.outcome()
                + "\n" + got.outcome());
          }
        }
      }
    }
    int processReads = (int) Math.min(base.processReads(), maxFaultsPerMemory);
    for (int i = 0; i < processReads; i++) {
      for (ReadFault f : List.of(ReadFault.fail(i), ReadFault.truncate(i, 3))) {
        Replay r = replay(c, binaries, segments, null, f, "process memory " + f);
        check(r.faultHit(), c + ": process memory " + f + " was never reached");
        injected++;
      }
    }
    int walked = base.walks().stream().mapToInt(Walk::segments).sum();
    return new CaseReport(c.name(), base.walks().size(), runtimeFrames, maxReads, injected,
        walked);
  }

  /** Fails at the first read of the case's walks its plan misses: {@link PlanCoverage}. */
  public PlanCoverage.Report checkPlanCoverage(SnapshotCase c) {
    PlanCoverage.Report report = planCoverage(c);
    check(report.gaps().isEmpty(), report.gaps().isEmpty() ? "" : report.gaps().get(0).message());
    return report;
  }

  /** The same, with every gap in the report instead of a failure at the first. */
  public PlanCoverage.Report planCoverage(SnapshotCase c) {
    check(factory.get() instanceof RuntimePlugin, "planCoverage needs a RuntimePlugin");
    return new PlanCoverage(this, factory.get().descriptor()).check(c);
  }

  /** The names of the plug-in's sample types. */
  private Set<String> declaredSampleTypes() {
    return factory.get() instanceof RuntimePlugin runtime
        ? runtime.sampleTypes().stream().map(SampleType::name).collect(Collectors.toSet())
        : Set.of();
  }

  private String descriptorId() {
    return factory.get().descriptor().id();
  }

  /** Many walks of the baseline's threads at once on one instance: each as in the baseline. */
  private void concurrent(SnapshotCase c, List<Supported> binaries,
      Map<Integer, List<Integer>> segments, Replay base) {
    List<Bound> bound = bind(c, binaries, new ReplayedMemory(c.processMemory(), null,
        Long.MAX_VALUE, Long.MAX_VALUE), "concurrency");
    ExecutorService pool = Executors.newFixedThreadPool(concurrency);
    try {
      List<Future<Walk>> futures = new ArrayList<>();
      for (int round = 0; round < 8; round++) {
        for (Walk w : base.walks()) {
          SnapshotCase.ThreadRecord t = thread(c, w.tid());
          List<PlanCoverage.NativeFrame> frames = selected(c, bound, t, segments);
          futures.add(pool.submit(() -> walkOnce(c, bound, frames, t, null)));
        }
      }
      for (Future<Walk> f : futures) {
        Walk got = f.get(bounds.timeoutMillis(), TimeUnit.MILLISECONDS);
        String expected = base.walk(got.tid()).outcome();
        check(got.outcome().equals(expected), c + " thread " + got.tid() + ": concurrent walks"
            + " on one instance gave other frames (per-process state is not thread safe):\n"
            + expected + "\n" + got.outcome());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      fail("interrupted");
    } catch (ExecutionException e) {
      throw new AssertionError(c + ": a concurrent walk threw " + e.getCause(), e.getCause());
    } catch (TimeoutException e) {
      fail(c + ": a concurrent walk did not end within " + bounds.timeoutMillis() + " ms");
    } finally {
      pool.shutdownNow();
      bound.forEach(b -> b.instance().detach());
    }
  }

  private record ThreadFault(int tid, ReadFault fault) {}

  record Bound(RuntimeBinary binary, RuntimeInstance instance, long bias) {
    boolean owns(long pc) {
      for (CodeRange r : binary.codeRanges()) {
        if (r.contains(pc - bias)) {
          return true;
        }
      }
      for (CodeRange r : instance.dynamicCodeRanges()) {
        if (r.contains(pc)) {
          return true;
        }
      }
      return false;
    }
  }

  record Walk(int tid, int segments, List<Frame> frames, String outcome, long reads,
      boolean faultHit, boolean failedOrErrorFrame) {}

  private record Replay(List<Walk> walks, List<String> bound, String outcomes, String rewalk,
      long processReads, boolean faultHit) {
    Walk walk(int tid) {
      return walks.stream().filter(w -> w.tid() == tid).findFirst().orElse(null);
    }
  }

  /**
   * Which of each thread's native frames in the plug-in's code the kit walks, by index in
   * {@link PlanCoverage#nativeFrames}: the unwound ones (the leaf and the caller its
   * {@code unwindCaller} names), and the scanned ones whose walk, with every candidate walked
   * as one sample, names frames the live stack has. Threads with none are left out.
   */
  private Map<Integer, List<Integer>> segments(SnapshotCase c, List<Supported> binaries) {
    ReplayedMemory process = new ReplayedMemory(c.processMemory(), null, Long.MAX_VALUE,
        Long.MAX_VALUE);
    List<Bound> bound = bind(c, binaries, process, "segments");
    Map<Integer, List<Integer>> out = new LinkedHashMap<>();
    try {
      for (SnapshotCase.ThreadRecord t : c.threads()) {
        List<PlanCoverage.NativeFrame> all = PlanCoverage.nativeFrames(c, bound, t);
        if (all.isEmpty()) {
          continue;
        }
        ReplayedMemory memory = new ReplayedMemory(t.memory(), c.allMemory(), null,
            bounds.maxReads(), bounds.maxBytes());
        String where = "thread " + t.tid() + ", every candidate segment";
        List<WalkResult> results = timed(c, where, () -> KitSample.sample(c, bound,
            all, threadOf(c, t, memory), where, KitSample.SampleCalls.NONE)).replacements();
        check(!memory.boundExceeded(), c + " " + where + ": the walk read more than "
            + bounds.maxReads() + " times or " + bounds.maxBytes() + " bytes; bound its loops");
        List<String> live = LiveStacks.thread(c.liveStacks(), t.tid());
        List<Integer> keep = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
          if (!all.get(i).scanned() || PlanCoverage.producedFrames(results.get(i), c, live)) {
            keep.add(i);
          }
        }
        if (!keep.isEmpty()) {
          out.put(t.tid(), List.copyOf(keep));
        }
      }
    } finally {
      bound.forEach(b -> b.instance().detach());
    }
    return out;
  }

  /** The frames {@link #segments} chose for thread {@code t}, found again on this binding. */
  private static List<PlanCoverage.NativeFrame> selected(SnapshotCase c, List<Bound> bound,
      SnapshotCase.ThreadRecord t, Map<Integer, List<Integer>> segments) {
    List<PlanCoverage.NativeFrame> all = PlanCoverage.nativeFrames(c, bound, t);
    List<PlanCoverage.NativeFrame> out = new ArrayList<>();
    for (int i : segments.getOrDefault(t.tid(), List.of())) {
      check(i < all.size(), c + ": thread " + t.tid() + " has other native frames in the"
          + " plug-in's code on a second attach: " + all.size() + " where there were more");
      out.add(all.get(i));
    }
    return out;
  }

  /** One pass over the case with a fresh plug-in: inspect, attach, walk each thread, detach. */
  private Replay replay(SnapshotCase c, List<Supported> binaries,
      Map<Integer, List<Integer>> segments, ThreadFault threadFault, ReadFault processFault,
      String label) {
    ReplayedMemory process = new ReplayedMemory(c.processMemory(), processFault,
        Long.MAX_VALUE, Long.MAX_VALUE);
    List<Bound> bound = bind(c, binaries, process, label);
    List<Walk> walks = new ArrayList<>();
    boolean hit = false;
    StringBuilder outcomes = new StringBuilder();
    StringBuilder rewalk = new StringBuilder();
    for (SnapshotCase.ThreadRecord t : c.threads()) {
      List<PlanCoverage.NativeFrame> frames = selected(c, bound, t, segments);
      if (!frames.isEmpty()) {
        ReadFault f = threadFault != null && threadFault.tid() == t.tid() ? threadFault.fault()
            : null;
        Walk w = timed(c, label, () -> walkOnce(c, bound, frames, t, f));
        hit |= w.faultHit();
        walks.add(w);
        outcomes.append(w.outcome()).append('\n');
        if (threadFault == null && processFault == null) {
          rewalk.append(timed(c, label, () -> walkOnce(c, bound, frames, t, null)).outcome())
              .append('\n');
        }
      }
    }
    for (Bound b : bound) {
      b.instance().getAndResetCounters();
      b.instance().detach();
    }
    hit |= processFault != null && process.faultHit();
    return new Replay(walks, bound.stream().map(b -> b.binary().runtime()).toList(),
        outcomes.toString(), rewalk.toString(), process.reads(), hit);
  }

  /**
   * The instance that owns a thread's leaf, as the host decides it: the PC lies in its code
   * ranges, or (JIT code in no file mapping) its {@code unwindCaller} claims the frame.
   */
  static Bound owner(SnapshotCase c, List<Bound> bound, SnapshotCase.ThreadRecord t) {
    long pc = t.registers().pc();
    for (Bound b : bound) {
      if (b.owns(pc)) {
        return b;
      }
    }
    boolean inFile = c.mappings().stream()
        .anyMatch(m -> m.contains(pc) && !m.isAnonymous() && !m.isPseudo());
    if (inFile) {
      return null;
    }
    for (Bound b : bound) {
      // A throwaway memory: this only asks who claims the frame; walkOnce asks again, counted.
      ThreadContext probe = new KitThread(c.pid(), t.tid(), t.registers(),
          new ReplayedMemory(t.memory(), null, Long.MAX_VALUE, Long.MAX_VALUE),
          t.threadPointer());
      String where = "thread " + t.tid();
      Map<Bound, SampleWalker> walkers = KitSample.open(c, List.of(b), probe, where);
      Registers caller = KitSample.unwindCaller(c, where, b, walkers, t.registers());
      if (caller != null) {
        return b;
      }
    }
    return null;
  }

  record Supported(RuntimeBinary binary, long bias) {}

  /**
   * Inspects every module file found for the case with a fresh plug-in. A binary is immutable
   * and shared by every process that maps it, so replays attach to these, as the host's cache
   * does.
   */
  List<Supported> inspect(SnapshotCase c) {
    RuntimePlugin plugin = (RuntimePlugin) factory.get();
    List<Supported> out = new ArrayList<>();
    for (SnapshotCase.Module m : c.modules()) {
      if (m.bytes() == null) {
        continue;
      }
      ElfImage image;
      try {
        image = ElfImage.parse(m.path(), m.bytes());
      } catch (ImageReadException e) {
        continue;
      }
      Inspection inspection = guard(c, "inspect", "inspect(" + m.path() + ")",
          () -> plugin.inspect(image));
      check(inspection != null, c + ": inspect(" + m.path() + ") returned null");
      Inspection twice = guard(c, "inspect", "inspect(" + m.path() + ")",
          () -> plugin.inspect(image));
      check(twice.getClass() == inspection.getClass(), c + ": inspect(" + m.path()
          + ") answered " + inspection + " and then " + twice);
      if (inspection instanceof Inspection.Supported s) {
        image.loadBias(c.mappings()).ifPresent(bias -> out.add(new Supported(s.binary(), bias)));
      }
    }
    return out;
  }

  /** Attaches to the replayed process for every supported binary. */
  List<Bound> bind(SnapshotCase c, List<Supported> binaries, ReplayedMemory memory,
      String label) {
    ProcessContext process = new ProcessContext() {
      @Override
      public int pid() {
        return c.pid();
      }

      @Override
      public List<Mapping> mappings() {
        return c.mappings();
      }

      @Override
      public RemoteMemory memory() {
        return memory;
      }
    };
    List<Bound> out = new ArrayList<>();
    for (Supported s : binaries) {
      long bias = s.bias();
      RuntimeInstance instance;
      try {
        instance = s.binary().attach(process, bias);
      } catch (AttachException e) {
        continue; // a refusal with a reason is a correct answer to a faulty process read
      } catch (RuntimeException e) {
        throw new AssertionError(c + " [" + label + "]: attach threw " + e, e);
      }
      guard(c, label, "mappingsChanged", () -> {
        instance.mappingsChanged(process);
        return null;
      });
      out.add(new Bound(s.binary(), instance, bias));
    }
    return out;
  }

  private static ThreadContext threadOf(SnapshotCase c, SnapshotCase.ThreadRecord t,
      RemoteMemory memory) {
    return new KitThread(c.pid(), t.tid(), t.registers(), memory, t.threadPointer());
  }

  private Walk walkOnce(SnapshotCase c, List<Bound> bound, List<PlanCoverage.NativeFrame> frames,
      SnapshotCase.ThreadRecord t, ReadFault fault) {
    ReplayedMemory memory = new ReplayedMemory(t.memory(), c.allMemory(), fault,
        bounds.maxReads(), bounds.maxBytes());
    String where = "thread " + t.tid() + (fault == null ? "" : " with " + fault);
    KitSample.Sampled sampled = KitSample.sample(c, bound, frames, threadOf(c, t, memory), where,
        KitSample.SampleCalls.NONE);
    List<WalkResult> results = sampled.replacements();
    check(!memory.boundExceeded(), c + " " + where + ": the walk read more than "
        + bounds.maxReads() + " times or " + bounds.maxBytes() + " bytes; bound its loops");
    List<Frame> all = new ArrayList<>();
    StringBuilder outcome = new StringBuilder(t.tid() + ":");
    boolean failed = false;
    String namespace = descriptorId() + ".";
    for (int i = 0; i < results.size(); i++) {
      WalkResult result = results.get(i);
      outcome.append(i == 0 ? " " : " | ");
      if (result instanceof WalkResult.Frames f) {
        all.addAll(f.frames());
        outcome.append("frames ").append(f.frames());
        failed |= f.frames().stream().anyMatch(Frame::isError);
      } else if (result instanceof WalkResult.Failed f) {
        all.addAll(f.partial());
        outcome.append("failed ").append(f.reason()).append(" after ").append(f.partial());
        failed = true;
      } else {
        outcome.append("native");
      }
    }
    for (String key : sampled.attributes().asMap().keySet()) {
      check(key.startsWith(namespace), c + " " + where + ": sample attribute '" + key
          + "' is outside the plug-in's namespace '" + namespace + "'; the host refuses it");
    }
    Set<String> declared = declaredSampleTypes();
    for (String type : sampled.values().keySet()) {
      check(declared.contains(type), c + " " + where + ": a value for sample type '" + type
          + "', which the plug-in does not declare " + declared + "; the host refuses it");
    }
    // Attributes and values are part of the outcome, so the checks that compare walks compare
    // them too.
    if (!sampled.attributes().isEmpty()) {
      outcome.append(" with sample attributes ").append(sampled.attributes());
    }
    if (!sampled.values().isEmpty()) {
      outcome.append(" with values ").append(sampled.values());
    }
    check(all.size() <= bounds.maxFrames(), c + " " + where + ": " + all.size()
        + " frames, more than " + bounds.maxFrames());
    return new Walk(t.tid(), results.size(), List.copyOf(all), outcome.toString(),
        memory.reads(), memory.faultHit(), failed);
  }

  private <T> T timed(SnapshotCase c, String label, Supplier<T> walk) {
    ExecutorService one = Executors.newSingleThreadExecutor(r -> {
      Thread th = new Thread(r, "conformance-walk");
      th.setDaemon(true);
      return th;
    });
    try {
      return one.submit(walk::get).get(bounds.timeoutMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError(c + " [" + label + "]: a walk did not end within "
          + bounds.timeoutMillis() + " ms; bound its loops");
    } catch (ExecutionException e) {
      if (e.getCause() instanceof AssertionError a) {
        throw a;
      }
      throw new AssertionError(c + " [" + label + "]: " + e.getCause(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    } finally {
      one.shutdownNow();
    }
  }

  static <T> T guard(SnapshotCase c, String where, String call, Supplier<T> body) {
    try {
      return body.get();
    } catch (RuntimeException | StackOverflowError e) {
      throw new AssertionError(c + " [" + where + "]: " + call + " threw " + e
          + "; bad target data must give an error frame, never an exception", e);
    }
  }

  private static SnapshotCase.ThreadRecord thread(SnapshotCase c, int tid) {
    return c.threads().stream().filter(t -> t.tid() == tid).findFirst().orElseThrow();
  }

  private static void check(boolean ok, String message) {
    if (!ok) {
      fail(message);
    }
  }

  private static void fail(String message) {
    throw new AssertionError(message);
  }

  /**
   * @param fsBase the thread pointer, null where the snapshot does not hold it
   * @param outcomes the plans' outcomes at the replayed tick (plan coverage), else empty
   */
  record KitThread(int pid, int tid, Registers registers, RemoteMemory memory, Long fsBase,
      List<PlanOutcome> outcomes) implements ThreadContext {
    KitThread(int pid, int tid, Registers registers, RemoteMemory memory, Long fsBase) {
      this(pid, tid, registers, memory, fsBase, List.of());
    }

    @Override
    public OptionalLong threadPointer() {
      return fsBase == null ? OptionalLong.empty() : OptionalLong.of(fsBase);
    }

    @Override
    public Optional<PlanOutcome> planOutcome(CapturePlan plan) {
      return outcomes.stream().filter(o -> o.plan().equals(plan)).findFirst();
    }

    @Override
    public long stackStart() {
      return registers.sp();
    }

    @Override
    public int stackLength() {
      return 0;
    }
  }
}
