package dev.polystack.plugin.api.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.ApiVersion;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.RuntimeInstance;
import dev.polystack.plugin.api.RuntimePlugin;
import dev.polystack.plugin.api.SampleRequest;
import dev.polystack.plugin.api.SampleWalk;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.ThreadContext;
import dev.polystack.plugin.api.WalkResult;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The plan coverage check catches what it promises on a real LuaJIT snapshot (the host's
 * corpus): a toy plug-in reads the 16 bytes under the interpreter's BASE register (rdx, the Lua
 * stack: heap memory the live walk read) and, at every deeper native frame of luajit, the return
 * address that frame was found by. Its plan copies those 16 bytes; without that copy step the
 * check names the first byte the walk read outside the tick's copies, and the segment.
 */
class PlanCoverageTest {
  private static SnapshotCase luajit;

  @BeforeAll
  static void load() throws IOException {
    Path corpus = Path.of(System.getProperty("basedir", "."), "..", "host", "src", "test",
        "resources", "snapshots").normalize();
    // The toy's frames are not LuaJIT's: the live text cannot confirm them.
    luajit = SnapshotCase.read(corpus.resolve("luajit-interpreter.psnap"),
        List.of(corpus.resolve("modules"))).withoutLiveStacks();
  }

  /**
   * Which segment reads under BASE, whether the plan copies it, and whether it reaches it from
   * the thread pointer (as a plan for thread-local state does) instead of from rdx.
   */
  record Shape(int baseReadingSegment, boolean copiesBase, boolean fromThreadPointer,
      boolean split) {
    Shape(int baseReadingSegment, boolean copiesBase) {
      this(baseReadingSegment, copiesBase, false, false);
    }

    Shape(int baseReadingSegment, boolean copiesBase, boolean fromThreadPointer) {
      this(baseReadingSegment, copiesBase, fromThreadPointer, false);
    }
  }

  static final class PlanToy implements RuntimePlugin {
    private final Shape shape;

    PlanToy(Shape shape) {
      this.shape = shape;
    }

    @Override
    public PluginDescriptor descriptor() {
      return new PluginDescriptor("plan-toy", "1.0", ApiVersion.CURRENT, "plan-toy",
          Set.of(Capability.DETECT, Capability.WALK_FRAMES, Capability.CAPTURE_AT_TICK),
          "kit self-test");
    }

    @Override
    public Inspection inspect(ModuleImage image) {
      return LuaPcallInspection.of(image, "plan-toy", () -> new PlanToyInstance(shape));
    }
  }

  static final class PlanToyInstance implements RuntimeInstance {
    private final Shape shape;

    PlanToyInstance(Shape shape) {
      this.shape = shape;
    }

    @Override
    public SampleWalker openSample(ThreadContext thread) {
      return request -> {
        Map<Integer, WalkResult> out = new java.util.HashMap<>();
        for (int segment = 0; segment < request.frames().size(); segment++) {
          SampleRequest.OwnedFrame f = request.frames().get(segment);
          out.put(f.nativeIndex(), walk(thread, f, segment));
        }
        return new SampleWalk(out);
      };
    }

    private WalkResult walk(ThreadContext thread, SampleRequest.OwnedFrame f, int segment) {
      try {
        long at = segment == shape.baseReadingSegment()
            ? thread.registers().get(Register.RDX) - 16
            : f.registers().sp() - (f.leaf() ? 0 : 8);
        long value = thread.memory().readLong(at);
        return new WalkResult.Frames(List.of(new Frame("plan-toy", value,
            "segment" + segment, "", 0, 0, "", Map.of())));
      } catch (MemoryReadException e) {
        return new WalkResult.Failed("unreadable", List.of());
      }
    }

    /**
     * Split: first a plan from the thread pointer, which this snapshot does not hold (so it
     * stops at once), then the one that copies what the walk reads.
     */
    @Override
    public List<CapturePlan> capturePlans() {
      if (!shape.split()) {
        return RuntimeInstance.super.capturePlans();
      }
      return List.of(CapturePlan.builder().threadPointer("tp").copy("tp", 0, 16, "thread_local")
          .build(), CapturePlan.builder().register("base", Register.RDX)
          .copy("base", -16, 16, "lua_base").build());
    }

    @Override
    public CapturePlan capturePlan() {
      CapturePlan.Builder plan = CapturePlan.builder();
      if (shape.fromThreadPointer()) {
        return plan.threadPointer("tp").copy("tp", 0, 16, "thread_local").build();
      }
      plan.register("base", Register.RDX);
      if (shape.copiesBase()) {
        plan.copy("base", -16, 16, "lua_base");
      }
      return plan.build();
    }
  }

  private static final long BASE = 0x7fa1ddfe3cb0L; // rdx of the case's one thread

  @Test
  void aPlanThatCopiesWhatTheWalkReadsPassesOnEverySegment() {
    PlanCoverage.Report r = Conformance.of(() -> new PlanToy(new Shape(0, true)))
        .checkPlanCoverage(luajit);
    assertEquals(1, r.copies(), r.toString());
    assertTrue(r.checkedSegments() >= 3 && r.deepestChecked() >= 2, r.toString());
    assertEquals(r.checkedSegments(), r.coveredReads(), r.toString());
    assertEquals(List.of(), r.planStops());
  }

  @Test
  void anInstancesSecondPlanCoversWhatItCopiesWhenItsFirstStops() {
    PlanCoverage.Report r = Conformance.of(() -> new PlanToy(new Shape(0, false, false, true)))
        .checkPlanCoverage(luajit);
    assertEquals(1, r.copies(), r.toString());
    assertEquals(r.checkedSegments(), r.coveredReads(), r.toString());
    assertEquals(1, r.planStops().size(), r.toString());
    assertTrue(r.planStops().get(0).contains("plan 0 stopped at step 0: ThreadPointer"),
        r.toString());
  }

  @Test
  void aPlanWithoutItsCopyStepFailsNamingTheUncoveredReadAndItsSegment() {
    AssertionError e = assertThrows(AssertionError.class,
        () -> Conformance.of(() -> new PlanToy(new Shape(0, false))).checkPlanCoverage(luajit));
    assertTrue(e.getMessage().contains("the sample walk of plan-toy (native frames from 0, the"
        + " leaf, pc 0x"), e.getMessage());
    assertTrue(e.getMessage().contains("in walk: the walk read 8 bytes at 0x"
        + Long.toHexString(BASE - 16) + ", which the tick did not copy"), e.getMessage());
  }

  @Test
  void aGapOfADeeperSegmentIsFoundInTheSampleWalk() {
    Conformance kit = Conformance.of(() -> new PlanToy(new Shape(2, false)));
    AssertionError e = assertThrows(AssertionError.class, () -> kit.checkPlanCoverage(luajit));
    assertTrue(e.getMessage().contains("the sample walk of plan-toy (native frames from 0"),
        e.getMessage());
    assertTrue(e.getMessage().contains("at 0x" + Long.toHexString(BASE - 16)), e.getMessage());
    // With the copy the same walk passes.
    Conformance.of(() -> new PlanToy(new Shape(2, true))).checkPlanCoverage(luajit);
  }

  /**
   * Snapshot format 1 records no thread pointer: a plan that starts from it stops in the kit and
   * its gaps are undecidable, until the test supplies the pointer the live thread had.
   */
  @Test
  void aPlanFromTheThreadPointerIsDecidedOnceTheCaseHasThePointer() {
    Conformance kit = Conformance.of(() -> new PlanToy(new Shape(0, true, true)));
    PlanCoverage.Report without = kit.planCoverage(luajit);
    assertEquals(1, without.gaps().size(), without.toString());
    assertTrue(!without.gaps().get(0).decidable(), without.toString());
    assertTrue(without.gaps().get(0).message().contains("cannot decide whether the plan covers"
        + " it: [plan 0 stopped at step 0: ThreadPointer: the snapshot records no thread"
        + " pointer"), without.gaps().get(0).message());
    // Here the "thread pointer" is where the walk reads, as a runtime's thread-local state is.
    int tid = luajit.threads().get(0).tid();
    PlanCoverage.Report with = kit.checkPlanCoverage(
        luajit.withThreadPointers(Map.of(tid, BASE - 16)));
    assertEquals(1, with.copies(), with.toString());
    assertEquals(List.of(), with.gaps());
  }

  @Test
  void aPlugInWithoutCaptureAtTickIsRefused() {
    AssertionError e = assertThrows(AssertionError.class,
        () -> Conformance.of(ConformanceKitTest.Toy::new).checkPlanCoverage(luajit));
    assertTrue(e.getMessage().contains("does not declare CAPTURE_AT_TICK"), e.getMessage());
  }
}
