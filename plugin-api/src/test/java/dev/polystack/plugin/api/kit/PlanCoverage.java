package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.PlanOutcome;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.RemoteMemory;
import dev.polystack.plugin.api.ThreadContext;
import dev.polystack.plugin.api.WalkResult;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Whether a plug-in's capture plan covers what its walks read ({@link
 * Conformance#checkPlanCoverage}, {@link Conformance#planCoverage}; docs/plugin-authoring.md,
 * "Plan coverage"). For each thread of a case it
 * <ol>
 *   <li>finds the native frames the host would hand the plug-in: the leaf when its PC is the
 *       plug-in's (or its {@code unwindCaller} claims it, and then that caller), and every
 *       return address in the thread's recorded stack window that lies in the plug-in's code,
 *       each with the stack pointer just above it and the leaf's other registers (the kit has no
 *       CFI unwinder; the plug-ins here read only RIP and RSP at callers);
 *   <li>walks them all, leaf first, on the full recorded memory, as the host does (every
 *       {@code unwindCaller}, then every {@code walk} with its segment);
 *   <li>asks every instance for its {@code capturePlan()}, runs the plans on the recorded memory
 *       ({@link TickCopies}) and walks the same frames again where reads are served only from
 *       the stack window, the plans' copies and {@code stable()};
 *   <li>reports, for every segment that produced runtime frames (named in the live stack, when
 *       the case has it), the first read of recorded memory the tick did not copy: a {@link Gap}
 *       naming the address, the segment and native frame, the copies and where the plans
 *       stopped. A plan that stops for want of what the snapshot lacks (a field the live walk
 *       never read, the thread pointer) makes its gaps undecidable, and the message says so.
 * </ol>
 */
public final class PlanCoverage {
  /** The most plug-in plans the host runs per process (docs/capture-plans.md, "Bounds"). */
  static final int PLANS_PER_PROCESS = 3;

  /**
   * A read of a segment's walk that the tick did not copy: the first one of that segment.
   *
   * @param frame the segment, its native frame and the call that read ({@code walk} or
   *     {@code unwindCaller})
   * @param recorded the bytes the live walk got there (at most 8), so a test can tell what
   *     was read
   * @param decidable false when a plan stopped for want of what the snapshot does not hold
   *     (its copies may have covered the read on the live process)
   * @param message one line for a failure: what, where, what the tick copied
   */
  public record Gap(int tid, String frame, long address, int length, byte[] recorded,
      boolean decidable, String message) {}

  /**
   * What one case exercised.
   *
   * @param segments native frames walked, over all threads
   * @param checkedSegments of those, frames whose walk gave runtime frames: held to the plan
   * @param deepestChecked highest segment index checked (0: the leaf only)
   * @param copies regions the plans copied, over all threads
   * @param coveredReads reads served from the tick's copies
   * @param stableReads reads through {@code stable()}
   * @param planStops where plans stopped, per thread
   * @param gaps the first uncovered read of each checked segment that made one
   */
  public record Report(String name, int segments, int checkedSegments, int deepestChecked,
      int copies, long coveredReads, long stableReads, List<String> planStops, List<Gap> gaps) {}

  /**
   * A native frame in a bound instance's code.
   *
   * @param scanned found by the stack scan (it may be a stale return address), not unwound
   */
  record NativeFrame(Conformance.Bound owner, Registers registers, boolean leaf,
      boolean scanned) {}

  private record Driven(WalkResult result, CoverageMemory.Miss miss) {}

  private final Conformance kit;
  private final PluginDescriptor descriptor;

  PlanCoverage(Conformance kit, PluginDescriptor descriptor) {
    this.kit = kit;
    this.descriptor = descriptor;
  }

  Report check(SnapshotCase c) {
    check(descriptor.has(Capability.CAPTURE_AT_TICK), descriptor.id() + " does not declare"
        + " CAPTURE_AT_TICK: the host never asks it for a plan, so there is none to check");
    ReplayedMemory process = new ReplayedMemory(c.processMemory(), null, Long.MAX_VALUE,
        Long.MAX_VALUE);
    List<Conformance.Bound> bound = kit.bind(c, kit.inspect(c), process, "plan coverage");
    int segments = 0;
    int checked = 0;
    int deepest = -1;
    int copies = 0;
    long covered = 0;
    long stable = 0;
    List<String> stops = new ArrayList<>();
    List<Gap> gaps = new ArrayList<>();
    try {
      for (SnapshotCase.ThreadRecord t : c.threads()) {
        List<NativeFrame> frames = nativeFrames(c, bound, t);
        if (frames.isEmpty()) {
          continue;
        }
        segments += frames.size();
        ReplayedMemory full = new ReplayedMemory(t.memory(), null, Long.MAX_VALUE,
            Long.MAX_VALUE);
        List<Driven> base = drive(c, t, bound, frames, full, null, List.of());
        List<CapturePlan> plans = plans(c, bound);
        TickCopies tick = TickCopies.of(plans, t.registers(), t.tid(), t.threadPointer(), t.memory(),
            c.processMemory(), c.mappings());
        copies += (int) tick.regions().stream().filter(r -> r.plan() >= 0).count();
        tick.stops().forEach(s -> stops.add("thread " + t.tid() + ": " + s));
        CoverageMemory memory = new CoverageMemory(t.memory(), tick);
        List<Driven> replay = drive(c, t, bound, frames, memory, memory, tick.outcomes(plans));
        List<String> live = LiveStacks.thread(c.liveStacks(), t.tid());
        Map<Conformance.Bound, Integer> segment = new IdentityHashMap<>();
        for (int i = 0; i < frames.size(); i++) {
          NativeFrame f = frames.get(i);
          int k = segment.merge(f.owner(), 1, Integer::sum) - 1;
          if (!producedFrames(base.get(i).result(), c, live)) {
            continue;
          }
          checked++;
          deepest = Math.max(deepest, k);
          CoverageMemory.Miss miss = replay.get(i).miss();
          if (miss != null) {
            gaps.add(gap(c, t, miss, tick));
          }
        }
        covered += memory.coveredReads();
        stable += memory.stableReads();
      }
    } finally {
      bound.forEach(b -> b.instance().detach());
    }
    check(checked > 0, c + ": no native frame of " + descriptor.id() + " gave runtime frames"
        + " (native frames walked: " + segments + "); record the case while the runtime runs");
    return new Report(c.name(), segments, checked, deepest, copies, covered, stable,
        List.copyOf(stops), List.copyOf(gaps));
  }

  private static Gap gap(SnapshotCase c, SnapshotCase.ThreadRecord t, CoverageMemory.Miss miss,
      TickCopies tick) {
    byte[] recorded = new byte[Math.min(8, miss.length())];
    t.memory().copy(miss.address(), recorded, 0, recorded.length);
    String where = c + " thread " + t.tid() + ", " + miss.frame() + ": the walk read "
        + miss.length() + (miss.length() == 1 ? " byte" : " bytes") + " at 0x"
        + Long.toHexString(miss.address()) + ", which the tick did not copy and which it did"
        + " not read through RemoteMemory.stable(); in bpf mode that read goes to the live"
        + " process, after the tick. ";
    String verdict = tick.decidable() ? "The capture plan does not cover it."
        : "This case cannot decide whether the plan covers it: " + tick.stops() + ".";
    return new Gap(t.tid(), miss.frame(), miss.address(), miss.length(), recorded,
        tick.decidable(), where + verdict + " Copied at the tick: " + tick.regions());
  }

  /** The distinct non-empty plans of the process's instances, as the host collects them. */
  private static List<CapturePlan> plans(SnapshotCase c, List<Conformance.Bound> bound) {
    List<CapturePlan> plans = new ArrayList<>();
    for (Conformance.Bound b : bound) {
      List<CapturePlan> mine = Conformance.guard(c, "plan coverage", "capturePlans",
          () -> b.instance().capturePlans());
      check(mine != null, c + ": capturePlans() returned null; return an empty list");
      for (CapturePlan p : mine) {
        check(p != null, c + ": capturePlans() holds null; leave it out");
        if (!p.isEmpty() && !plans.contains(p)) {
          plans.add(p);
        }
      }
    }
    check(!plans.isEmpty(), c + ": capturePlan() gave no plan after walks of the case; a plan"
        + " may wait for what walks learn, but not past them");
    check(plans.size() <= PLANS_PER_PROCESS, c + ": " + plans.size() + " distinct plans; the"
        + " host runs " + PLANS_PER_PROCESS + " per process and refuses the rest");
    return plans;
  }

  /** Whether a walk gave runtime frames that the live walk (when recorded) printed too. */
  static boolean producedFrames(WalkResult r, SnapshotCase c, List<String> live) {
    List<Frame> frames = r instanceof WalkResult.Frames f ? f.frames()
        : r instanceof WalkResult.Failed f ? f.partial() : List.of();
    if (frames.isEmpty()) {
      return false;
    }
    if (c.liveStacks().isEmpty()) {
      return true;
    }
    for (Frame f : frames) {
      if (!f.function().isEmpty() && LiveStacks.find(live, 0, f) < 0) {
        return false; // a stale return address the scan took for a frame
      }
    }
    return true;
  }

  /** The native frames the host would hand the bound instances, leaf first. */
  static List<NativeFrame> nativeFrames(SnapshotCase c, List<Conformance.Bound> bound,
      SnapshotCase.ThreadRecord t) {
    List<NativeFrame> frames = new ArrayList<>();
    Registers regs = t.registers();
    long scanFrom = regs.sp();
    Conformance.Bound leaf = Conformance.owner(c, bound, t);
    if (leaf != null) {
      frames.add(new NativeFrame(leaf, regs, true, false));
      ThreadContext probe = new Conformance.KitThread(c.pid(), t.tid(), regs,
          new ReplayedMemory(t.memory(), null, Long.MAX_VALUE, Long.MAX_VALUE),
          t.threadPointer());
      String where = "thread " + t.tid();
      Registers caller = KitSample.unwindCaller(c, where, leaf,
          KitSample.open(c, List.of(leaf), probe, where), regs);
      Conformance.Bound next = caller == null ? null : ownerOf(bound, caller.pc());
      if (next != null) {
        frames.add(new NativeFrame(next, caller, false, false));
        scanFrom = Math.max(scanFrom, caller.sp());
      }
    }
    long end = regs.sp() - TickCopies.RED_ZONE + TickCopies.STACK_BYTES;
    byte[] word = new byte[8];
    for (long slot = (scanFrom + 7) & ~7L; slot + 8 <= end; slot += 8) {
      if (t.memory().copy(slot, word, 0, 8) != 8) {
        continue;
      }
      long v = 0;
      for (int k = 7; k >= 0; k--) {
        v = v << 8 | (word[k] & 0xff);
      }
      Conformance.Bound owner = ownerOf(bound, v);
      if (owner != null) {
        frames.add(new NativeFrame(owner, regs.with(Register.RIP, v).with(Register.RSP,
            slot + 8), false, true));
      }
    }
    return frames;
  }

  private static Conformance.Bound ownerOf(List<Conformance.Bound> bound, long pc) {
    for (Conformance.Bound b : bound) {
      if (b.owns(pc)) {
        return b;
      }
    }
    return null;
  }

  /**
   * One sample as the host runs it ({@link Conformance#sample}), each native frame's first
   * uncovered read taken from its {@code unwindCaller}, else from its {@code walk}.
   */
  private static List<Driven> drive(SnapshotCase c, SnapshotCase.ThreadRecord t,
      List<Conformance.Bound> bound, List<NativeFrame> frames, RemoteMemory memory,
      CoverageMemory coverage, List<PlanOutcome> outcomes) {
    ThreadContext thread = new Conformance.KitThread(c.pid(), t.tid(), t.registers(), memory,
        t.threadPointer(), outcomes);
    CoverageMemory.Miss[] misses = new CoverageMemory.Miss[frames.size()];
    KitSample.SampleCalls calls = coverage == null ? KitSample.SampleCalls.NONE
        : new KitSample.SampleCalls() {
          @Override
          public void before(int i, int segment, String call) {
            NativeFrame f = frames.get(i);
            coverage.frame((segment < 0 ? "the sample walk of " + f.owner().binary().runtime()
                + " (native frames from " + i : "segment " + segment + " of "
                + f.owner().binary().runtime() + " (native frame " + i)
                + ", " + (f.leaf() ? "the leaf" : "a caller")
                + ", pc 0x" + Long.toHexString(f.registers().pc()) + ", sp 0x"
                + Long.toHexString(f.registers().sp()) + ") in " + call);
          }

          @Override
          public void after(int i, String call) {
            if (misses[i] == null) {
              misses[i] = coverage.firstMiss();
            }
          }
        };
    List<WalkResult> results = KitSample.sample(c, bound, frames, thread,
        "thread " + t.tid() + " (plan coverage)", calls).replacements();
    List<Driven> out = new ArrayList<>();
    for (int i = 0; i < frames.size(); i++) {
      WalkResult r = results.get(i);
      out.add(new Driven(r, misses[i])); // r null: the frame stays native
    }
    return out;
  }

  private static void check(boolean ok, String message) {
    if (!ok) {
      throw new AssertionError(message);
    }
  }
}
