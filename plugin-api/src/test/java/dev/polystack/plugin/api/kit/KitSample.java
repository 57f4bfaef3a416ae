package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.SampleAttributes;
import dev.polystack.plugin.api.SampleRequest;
import dev.polystack.plugin.api.SampleWalk;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.ThreadContext;
import dev.polystack.plugin.api.WalkRequest;
import dev.polystack.plugin.api.WalkResult;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * One sample of a thread driven as the host drives it ({@code StackWalker}): the per-sample
 * boundary on every bound instance, every frame's {@code unwindCaller}, then the walks, per
 * frame or through a sample walker (API 1.10). {@link Conformance} and {@link PlanCoverage}
 * both sample this way.
 */
final class KitSample {
  private KitSample() {}

  /** Told around each call {@link #sample} makes for a native frame (plan coverage's misses). */
  interface SampleCalls {
    SampleCalls NONE = new SampleCalls() {};

    /** Before {@code call} ({@code unwindCaller} or {@code walk}) of native frame {@code i}. */
    default void before(int i, int segment, String call) {}

    /** After it. */
    default void after(int i, String call) {}
  }

  /**
   * One sample of a thread as the host runs it: {@code beginSample} on every instance of the
   * process, every frame's {@code unwindCaller}, then every frame's {@code walk} with its
   * segment index (the frames of each instance counted leaf first). A walk's null answer is
   * handed back as it is.
   */
  static List<WalkResult> sample(SnapshotCase c, List<Conformance.Bound> bound,
      List<PlanCoverage.NativeFrame> frames, ThreadContext thread, String where,
      SampleCalls calls) {
    Map<Conformance.Bound, SampleWalker> walkers = open(c, bound, thread, where);
    int[] segments = new int[frames.size()];
    Map<Conformance.Bound, Integer> perOwner = new IdentityHashMap<>();
    for (int i = 0; i < frames.size(); i++) {
      PlanCoverage.NativeFrame f = frames.get(i);
      segments[i] = perOwner.merge(f.owner(), 1, Integer::sum) - 1;
      calls.before(i, segments[i], "unwindCaller");
      unwindCaller(c, where, f.owner(), walkers, thread, f.registers());
      calls.after(i, "unwindCaller");
    }
    // A plug-in that walks whole samples gets one walk of its walker with all its frames.
    Map<Conformance.Bound, SampleWalk> sampled = new IdentityHashMap<>();
    for (int i = 0; i < frames.size(); i++) {
      Conformance.Bound owner = frames.get(i).owner();
      if (!owner.walksSamples() || sampled.containsKey(owner)) {
        continue;
      }
      List<SampleRequest.OwnedFrame> owned = new ArrayList<>();
      for (int j = i; j < frames.size(); j++) {
        if (frames.get(j).owner() == owner) {
          owned.add(new SampleRequest.OwnedFrame(j, frames.get(j).registers()));
        }
      }
      calls.before(i, 0, "walk");
      SampleWalker walker = walkers.get(owner);
      SampleWalk walk = Conformance.guard(c, where, "walk", () -> {
        synchronized (owner.instance()) { // as the host holds it
          return walker.walk(new SampleRequest(thread, owned));
        }
      });
      for (SampleRequest.OwnedFrame f : owned) {
        calls.after(f.nativeIndex(), "walk");
      }
      check(walk != null, c + " " + where + ": the sample walker's walk returned null");
      for (int index : walk.replacements().keySet()) {
        check(owned.stream().anyMatch(f -> f.nativeIndex() == index), c + " " + where
            + ": the sample walker replaced native frame " + index + ", not one of its frames "
            + owned.stream().map(SampleRequest.OwnedFrame::nativeIndex).toList()
            + "; the host refuses the whole walk");
      }
      sampled.put(owner, walk);
    }
    List<WalkResult> out = new ArrayList<>();
    for (int i = 0; i < frames.size(); i++) {
      PlanCoverage.NativeFrame f = frames.get(i);
      SampleWalk walk = sampled.get(f.owner());
      if (walk != null) {
        WalkResult r = walk.replacements().getOrDefault(i, WalkResult.notMine());
        // The sample's attributes travel with its first replacement, so the checks that
        // compare walks compare them too.
        if (!walk.attributes().isEmpty() && !walk.replacements().isEmpty()
            && walk.replacements().keySet().iterator().next() == i) {
          r = withAttributes(r, walk.attributes());
        }
        out.add(r);
        continue;
      }
      int k = segments[i];
      calls.before(i, k, "walk");
      WalkResult r = Conformance.guard(c, where, "walk", () -> f.owner().instance().walk(
          new WalkRequest(thread, f.registers(), f.leaf(), k)));
      calls.after(i, "walk");
      out.add(r);
    }
    return out;
  }

  /**
   * The sample's start on every bound instance, as the host makes it: {@code openSample} for a
   * plug-in that walks whole samples (its walker, under the instance's monitor; null fails the
   * kit), {@code beginSample} for the others.
   */
  static Map<Conformance.Bound, SampleWalker> open(SnapshotCase c, List<Conformance.Bound> bound, ThreadContext thread,
      String where) {
    Map<Conformance.Bound, SampleWalker> walkers = new IdentityHashMap<>();
    for (Conformance.Bound b : bound) {
      if (b.walksSamples()) {
        SampleWalker walker = Conformance.guard(c, where, "openSample", () -> {
          synchronized (b.instance()) {
            return b.instance().openSample(thread);
          }
        });
        check(walker != null, c + " " + where + ": openSample returned null; a plug-in that"
            + " declares WALK_SAMPLES returns a walker for every sample");
        walkers.put(b, walker);
      } else {
        Conformance.guard(c, where, "beginSample", () -> {
          b.instance().beginSample(thread);
          return null;
        });
      }
    }
    return walkers;
  }

  /** {@code unwindCaller} of {@code b}, through its sample walker when it has one. */
  static Registers unwindCaller(SnapshotCase c, String where, Conformance.Bound b,
      Map<Conformance.Bound, SampleWalker> walkers, ThreadContext thread, Registers frame) {
    SampleWalker walker = walkers.get(b);
    if (walker == null) {
      return Conformance.guard(c, where, "unwindCaller", () -> b.instance().unwindCaller(thread, frame));
    }
    return Conformance.guard(c, where, "unwindCaller", () -> {
      synchronized (b.instance()) {
        return walker.unwindCaller(frame);
      }
    });
  }

  /** A replacement {@code r} carrying {@code attributes} as well. */
  private static WalkResult withAttributes(WalkResult r, SampleAttributes attributes) {
    if (r instanceof WalkResult.Failed f) {
      return new WalkResult.Failed(f.reason(), f.partial(),
          attributes.orElse(f.sampleAttributes()));
    }
    WalkResult.Frames f = (WalkResult.Frames) r;
    return new WalkResult.Frames(f.frames(), attributes.orElse(f.sampleAttributes()));
  }

  private static void check(boolean ok, String message) {
    if (!ok) {
      throw new AssertionError(message);
    }
  }
}
