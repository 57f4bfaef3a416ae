package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.SampleAttributes;
import dev.polystack.plugin.api.SampleRequest;
import dev.polystack.plugin.api.SampleWalk;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.ThreadContext;
import dev.polystack.plugin.api.WalkResult;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One sample of a thread driven as the host drives it ({@code StackWalker}): a sample walker
 * opened on every bound instance, every frame's {@code unwindCaller}, then one {@code walk} per
 * walker with all of its frames. {@link Conformance} and {@link PlanCoverage} both sample this
 * way.
 */
final class KitSample {
  private KitSample() {}

  /** Told around each call {@link #sample} makes for a native frame (plan coverage's misses). */
  interface SampleCalls {
    SampleCalls NONE = new SampleCalls() {};

    /**
     * Before {@code call} of native frame {@code i}: {@code unwindCaller} of the owner's
     * {@code segment}-th frame, or ({@code segment} -1) {@code walk} of all the owner's frames
     * from the leaf-most, {@code i}, on: a whole-sample walk reads for all of them at once.
     */
    default void before(int i, int segment, String call) {}

    /** After it. */
    default void after(int i, String call) {}
  }

  /**
   * What one sample's walks gave.
   *
   * @param replacements per native frame, what replaces it; null where it stays native
   * @param attributes the sample's attributes, the leaf-most walker's value per key
   * @param values the sample's values per sample type, the leaf-most walker's per type
   */
  record Sampled(List<WalkResult> replacements, SampleAttributes attributes,
      Map<String, Long> values) {}

  /** One sample of a thread as the host runs it. */
  static Sampled sample(SnapshotCase c, List<Conformance.Bound> bound,
      List<PlanCoverage.NativeFrame> frames, ThreadContext thread, String where,
      SampleCalls calls) {
    Map<Conformance.Bound, SampleWalker> walkers = open(c, bound, thread, where);
    Map<Conformance.Bound, Integer> segments = new IdentityHashMap<>();
    for (int i = 0; i < frames.size(); i++) {
      PlanCoverage.NativeFrame f = frames.get(i);
      // The frame's place among its owner's frames, leaf first: what plan coverage names.
      calls.before(i, segments.merge(f.owner(), 1, Integer::sum) - 1, "unwindCaller");
      unwindCaller(c, where, f.owner(), walkers, f.registers());
      calls.after(i, "unwindCaller");
    }
    WalkResult[] replaced = new WalkResult[frames.size()];
    SampleAttributes attributes = SampleAttributes.EMPTY;
    Map<String, Long> values = new TreeMap<>();
    Map<Conformance.Bound, Boolean> walked = new IdentityHashMap<>();
    for (int i = 0; i < frames.size(); i++) {
      Conformance.Bound owner = frames.get(i).owner();
      if (walked.put(owner, Boolean.TRUE) != null) {
        continue;
      }
      List<SampleRequest.OwnedFrame> owned = new ArrayList<>();
      for (int j = i; j < frames.size(); j++) {
        if (frames.get(j).owner() == owner) {
          owned.add(new SampleRequest.OwnedFrame(j, frames.get(j).registers()));
        }
      }
      calls.before(i, -1, "walk");
      SampleWalker walker = walkers.get(owner);
      SampleWalk walk = Conformance.guard(c, where, "walk", () -> {
        synchronized (owner.instance()) { // as the host holds it
          return walker.walk(new SampleRequest(thread, owned));
        }
      });
      calls.after(i, "walk");
      check(walk != null, c + " " + where + ": the sample walker's walk returned null");
      for (int index : walk.replacements().keySet()) {
        check(owned.stream().anyMatch(f -> f.nativeIndex() == index), c + " " + where
            + ": the sample walker replaced native frame " + index + ", not one of its frames "
            + owned.stream().map(SampleRequest.OwnedFrame::nativeIndex).toList()
            + "; the host refuses the whole walk");
      }
      walk.replacements().forEach((index, r) -> replaced[index] = r);
      attributes = attributes.orElse(walk.attributes());
      walk.values().forEach(values::putIfAbsent);
    }
    return new Sampled(Arrays.asList(replaced), attributes, Map.copyOf(values));
  }

  /**
   * The sample's walker on every bound instance, as the host opens them: {@code openSample}
   * under the instance's monitor; null fails the kit.
   */
  static Map<Conformance.Bound, SampleWalker> open(SnapshotCase c, List<Conformance.Bound> bound,
      ThreadContext thread, String where) {
    Map<Conformance.Bound, SampleWalker> walkers = new IdentityHashMap<>();
    for (Conformance.Bound b : bound) {
      SampleWalker walker = Conformance.guard(c, where, "openSample", () -> {
        synchronized (b.instance()) {
          return b.instance().openSample(thread);
        }
      });
      check(walker != null, c + " " + where + ": openSample returned null; a plug-in that"
          + " walks frames returns a walker for every sample");
      walkers.put(b, walker);
    }
    return walkers;
  }

  /** {@code unwindCaller} of {@code b}'s sample walker, under the instance's monitor. */
  static Registers unwindCaller(SnapshotCase c, String where, Conformance.Bound b,
      Map<Conformance.Bound, SampleWalker> walkers, Registers frame) {
    SampleWalker walker = walkers.get(b);
    return Conformance.guard(c, where, "unwindCaller", () -> {
      synchronized (b.instance()) {
        return walker.unwindCaller(frame);
      }
    });
  }

  private static void check(boolean ok, String message) {
    if (!ok) {
      throw new AssertionError(message);
    }
  }
}
