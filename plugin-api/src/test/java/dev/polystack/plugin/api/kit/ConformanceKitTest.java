package dev.polystack.plugin.api.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.ApiVersion;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.RuntimeInstance;
import dev.polystack.plugin.api.RuntimePlugin;
import dev.polystack.plugin.api.SampleAttributes;
import dev.polystack.plugin.api.SampleRequest;
import dev.polystack.plugin.api.SampleWalk;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.ThreadContext;
import dev.polystack.plugin.api.SampleType;
import dev.polystack.plugin.api.WalkResult;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The kit must catch what it promises to catch: a toy plug-in that reads the recorded stack of a
 * real LuaJIT snapshot passes, and each of its broken variants fails with the matching message.
 * The case is the host's corpus (recorded from a live luajit), read by the kit alone.
 */
class ConformanceKitTest {
  private static SnapshotCase luajit;

  @BeforeAll
  static void load() throws IOException {
    Path corpus = Path.of(System.getProperty("basedir", "."), "..", "host", "src", "test",
        "resources", "snapshots").normalize();
    luajit = SnapshotCase.read(corpus.resolve("luajit-interpreter.psnap"),
        List.of(corpus.resolve("modules")));
  }

  enum Flaw { NONE, THROWS_ON_FAULT, UNBOUNDED, STATEFUL, STATEFUL_ATTRIBUTE, FOREIGN_ATTRIBUTE,
    NEWER_API, UNSTAMPED, FOREIGN_INDEX, UNDECLARED_VALUE, FOREIGN_SAMPLE_TYPE }

  /**
   * Claims every executable range of the luajit binary and reads the top stack slot four times
   * (the one slot the recorded walk is sure to have read).
   */
  static final class Toy implements RuntimePlugin {
    private final Flaw flaw;

    Toy(Flaw flaw) {
      this.flaw = flaw;
    }

    public Toy() {
      this(Flaw.NONE);
    }

    @Override
    public PluginDescriptor descriptor() {
      return new PluginDescriptor("toy", flaw == Flaw.UNSTAMPED ? "unknown" : "1.0",
          flaw == Flaw.NEWER_API ? new ApiVersion(ApiVersion.CURRENT.major() + 1, 0)
              : ApiVersion.CURRENT, "toy",
          Set.of(Capability.DETECT, Capability.WALK_FRAMES), "kit self-test");
    }

    @Override
    public List<SampleType> sampleTypes() {
      return List.of(new SampleType(flaw == Flaw.FOREIGN_SAMPLE_TYPE ? "other.slots_read"
          : "toy.slots_read", "count"));
    }

    @Override
    public Inspection inspect(ModuleImage image) {
      return LuaPcallInspection.of(image, "toy", () -> new ToyInstance(flaw));
    }
  }

  static final class ToyInstance implements RuntimeInstance {
    private final Flaw flaw;
    private int walks;

    ToyInstance(Flaw flaw) {
      this.flaw = flaw;
    }

    /** A walker that reads 4 stack slots at each owned frame (every one with the flaws'). */
    @Override
    public SampleWalker openSample(ThreadContext thread) {
      return request -> {
        Map<Integer, WalkResult> out = new java.util.HashMap<>();
        int read = 0;
        for (SampleRequest.OwnedFrame f : request.frames()) {
          WalkResult r = walk(thread, f.registers().sp());
          out.put(f.nativeIndex(), r);
          read += r instanceof WalkResult.Frames frames ? frames.frames().size()
              : ((WalkResult.Failed) r).partial().size();
        }
        if (flaw == Flaw.FOREIGN_INDEX) {
          out.put(999, new WalkResult.Frames(List.of()));
        }
        walks++;
        SampleAttributes.Builder attributes = SampleAttributes.builder()
            .put(flaw == Flaw.FOREIGN_ATTRIBUTE ? "other.slots" : "toy.slots", read);
        if (flaw == Flaw.STATEFUL_ATTRIBUTE) {
          attributes.put("toy.walks", walks);
        }
        return new SampleWalk(out, attributes.build(), Map.of(
            flaw == Flaw.UNDECLARED_VALUE ? "toy.undeclared" : "toy.slots_read", (long) read));
      };
    }

    private WalkResult walk(ThreadContext thread, long sp) {
      List<Frame> frames = new java.util.ArrayList<>();
      int slots = flaw == Flaw.UNBOUNDED ? Integer.MAX_VALUE : 4;
      for (int i = 0; i < slots; i++) {
        long slot;
        try {
          slot = thread.memory().readLong(sp);
        } catch (MemoryReadException e) {
          if (flaw == Flaw.THROWS_ON_FAULT) {
            throw new IllegalStateException(e);
          }
          return new WalkResult.Failed("stack_unreadable", frames);
        }
        String name = "slot" + i + (flaw == Flaw.STATEFUL ? "#" + walks : "");
        frames.add(new Frame("toy", slot, name, "", 0, 0, "", Map.of()));
      }
      return new WalkResult.Frames(frames);
    }
  }

  @Test
  void aCarefulPluginPasses() {
    // Toy frames are named slot0..3, which the live walk never printed: checked separately.
    var report = Conformance.of(Toy::new).checkDescriptor();
    assertEquals("toy", report.id());
    AssertionError e = assertThrows(AssertionError.class,
        () -> Conformance.of(Toy::new).checkCase(luajit));
    assertTrue(e.getMessage().contains("frame 'slot0' (:0) is not in that thread's live stack"),
        e.getMessage());
  }

  @Test
  void aCarefulPluginPassesEveryWalkCheck() {
    var report = Conformance.of(Toy::new).checkCase(withoutLiveText(luajit));
    assertEquals(1, report.walks());
    // The leaf, and the deeper interpreter frames of the stack scan: without the live text none
    // can be told stale, so every one is walked, each reading its 4 slots.
    assertTrue(report.segments() > 1, report.toString());
    assertEquals(4 * report.segments(), report.runtimeFrames());
    assertEquals(4 * report.segments(), report.maxReads());
    assertTrue(report.faultsInjected() >= 8 * report.segments(), report.toString());
  }

  @Test
  void aValueForASampleTypeThePluginDidNotDeclareIsCaught() {
    AssertionError e = assertThrows(AssertionError.class, () -> Conformance.of(
        () -> new Toy(Flaw.UNDECLARED_VALUE)).checkCase(withoutLiveText(luajit)));
    assertTrue(e.getMessage().contains("a value for sample type 'toy.undeclared', which the"
        + " plug-in does not declare [toy.slots_read]"), e.getMessage());
  }

  @Test
  void aSampleTypeOutsideThePluginsNamespaceIsCaught() {
    AssertionError e = assertThrows(AssertionError.class, () -> Conformance.of(
        () -> new Toy(Flaw.FOREIGN_SAMPLE_TYPE)).checkDescriptor());
    assertEquals("sample type 'other.slots_read' is outside its namespace 'toy.'; the host"
        + " refuses the plug-in", e.getMessage());
  }

  @Test
  void aSampleWalkThatReplacesAFrameItWasNotGivenIsCaught() {
    AssertionError e = assertThrows(AssertionError.class, () -> Conformance.of(
        () -> new Toy(Flaw.FOREIGN_INDEX)).checkCase(withoutLiveText(luajit)));
    assertTrue(e.getMessage().contains("the sample walker replaced native frame 999, not one of"
        + " its frames"), e.getMessage());
  }

  @Test
  void anExceptionOnAFailedReadIsCaught() {
    AssertionError e = assertThrows(AssertionError.class,
        () -> Conformance.of(() -> new Toy(Flaw.THROWS_ON_FAULT))
            .checkCase(withoutLiveText(luajit)));
    assertTrue(e.getMessage().contains("walk threw java.lang.IllegalStateException"),
        e.getMessage());
  }

  @Test
  void anUnboundedLoopIsCaught() {
    AssertionError e = assertThrows(AssertionError.class,
        () -> Conformance.of(() -> new Toy(Flaw.UNBOUNDED)).checkCase(withoutLiveText(luajit)));
    assertTrue(e.getMessage().contains("the walk read more than 20000 times"), e.getMessage());
  }

  @Test
  void stateThatChangesFramesIsCaught() {
    AssertionError e = assertThrows(AssertionError.class,
        () -> Conformance.of(() -> new Toy(Flaw.STATEFUL)).checkCase(withoutLiveText(luajit)));
    assertTrue(e.getMessage().contains("a second walk on the same instance gave other frames"),
        e.getMessage());
  }

  @Test
  void stateThatChangesSampleAttributesIsCaught() {
    AssertionError e = assertThrows(AssertionError.class, () -> Conformance.of(
        () -> new Toy(Flaw.STATEFUL_ATTRIBUTE)).checkCase(withoutLiveText(luajit)));
    assertTrue(e.getMessage().contains("a second walk on the same instance gave other frames")
        && e.getMessage().contains("toy.walks"), e.getMessage());
  }

  @Test
  void sampleAttributesOutsideThePluginsNamespaceAreCaught() {
    AssertionError e = assertThrows(AssertionError.class, () -> Conformance.of(
        () -> new Toy(Flaw.FOREIGN_ATTRIBUTE)).checkCase(withoutLiveText(luajit)));
    assertTrue(e.getMessage().contains("sample attribute 'other.slots' is outside the plug-in's"
        + " namespace 'toy.'"), e.getMessage());
  }

  @Test
  void descriptorFlawsAreCaught() {
    AssertionError api = assertThrows(AssertionError.class,
        () -> Conformance.of(() -> new Toy(Flaw.NEWER_API)).checkDescriptor());
    assertTrue(api.getMessage().contains("which a host at API " + ApiVersion.CURRENT
        + " refuses"), api.getMessage());
    AssertionError version = assertThrows(AssertionError.class,
        () -> Conformance.of(() -> new Toy(Flaw.UNSTAMPED)).checkDescriptor());
    assertTrue(version.getMessage().contains("stamp it"), version.getMessage());
  }

  @Test
  void theKitReadsTheSnapshotAndFindsTheModulesByDigest() {
    // The pid of the recorded process, as the recording's own live output names it.
    assertTrue(luajit.pid() > 0);
    assertTrue(luajit.liveStacks().contains("Thread " + luajit.pid() + " \"luajit\""),
        luajit.liveStacks());
    assertEquals(1, luajit.threads().size());
    assertTrue(luajit.modules().stream().anyMatch(m -> m.path().equals("/usr/bin/luajit")
        && m.bytes() != null), "luajit not found in the module store");
    // record-corpus.sh runs the workloads from a fresh mktemp directory under /tmp.
    assertTrue(java.util.regex.Pattern.compile("fib \\(/tmp/polystack-corpus[^/ ]*/account"
        + "\\.lua:7\\)").matcher(luajit.liveStacks()).find(), luajit.liveStacks());
  }

  private static SnapshotCase withoutLiveText(SnapshotCase c) {
    return c.withoutLiveStacks();
  }
}
