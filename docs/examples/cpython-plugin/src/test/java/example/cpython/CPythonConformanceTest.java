package example.cpython;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CaptureStep;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.kit.Conformance;
import dev.polystack.plugin.api.kit.PlanCoverage;
import dev.polystack.plugin.api.kit.SnapshotCase;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The plug-in author kit (docs/plugin-authoring.md, "Testing with snapshots and the author kit")
 * on snapshots of live Pythons running src/test/python/spinners.py, one per case of the
 * directory {@code -Dcpython.cases} names (README.md, "Tests"): the descriptor, every read of the
 * walks failing and truncated in turn, and the capture plan's coverage from each thread's own
 * thread pointer. The frames are checked against the program's source as well.
 */
class CPythonConformanceTest {
  private static final Conformance KIT = Conformance.of(CPythonPlugin::new);
  private static final Pattern STOP =
      Pattern.compile("^thread (\\d+): plan \\d+ stopped at step (\\d+): (.*)$");

  static Stream<RecordedCase> cases() throws Exception {
    return RecordedCase.all();
  }

  @Test
  void descriptorPassesTheKit() {
    PluginDescriptor d = KIT.checkDescriptor();
    assertEquals("cpython", d.id());
    assertEquals("cpython", d.frameType());
    assertTrue(d.has(Capability.CAPTURE_AT_TICK), d.toString());
  }

  /**
   * What the live walk printed is the program: the main thread in the evaluation loop under
   * innermost, middle, worker, Job.run and the module, each parked thread under park, its own
   * number of recurse frames and Job.run, every line inside its function.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void liveWalkNamedTheProgramsFunctionsAndLines(RecordedCase rc) throws Exception {
    SnapshotCase c = rc.read();
    Workload program = Workload.read();
    Map<Integer, List<String>> threads = LiveText.threads(c.liveStacks());
    List<Integer> depths = new ArrayList<>();
    int mains = 0;
    for (var e : threads.entrySet()) {
      List<LiveText.PyFrame> own = LiveText.pythonFrames(e.getValue()).stream()
          .filter(f -> Workload.FILE_NAME.equals(Path.of(f.file()).getFileName().toString()))
          .toList();
      String where = rc + " thread " + e.getKey() + ": " + e.getValue();
      for (LiveText.PyFrame f : own) {
        assertTrue(program.lines(f.qualname()).contains(f.line()), "line " + f.line()
            + " is not in " + f.qualname() + " " + program.lines(f.qualname()) + "; " + where);
      }
      List<String> names = own.stream().map(LiveText.PyFrame::qualname).toList();
      if (names.contains("<module>")) {
        mains++;
        // Its leaf is in the evaluation loop: these are the frames the kit walks at the leaf.
        assertEquals(List.of("innermost", "middle", "worker", "Job.run", "<module>"),
            LiveText.leadingRun(e.getValue()).stream().map(LiveText.PyFrame::qualname)
                .toList(), where);
      } else {
        assertTrue(LiveText.leadingRun(e.getValue()).isEmpty(), "a parked thread's leaf is"
            + " the C sleep; " + where);
        assertTrue(names.size() >= 3, where);
        int depth = names.size() - 2;
        assertEquals("park", names.get(0), where);
        assertEquals("Job.run", names.get(names.size() - 1), where);
        assertEquals(List.of("recurse"), names.subList(1, 1 + depth).stream().distinct()
            .toList(), where);
        assertTrue(LiveText.pythonFrames(e.getValue()).stream()
            .anyMatch(f -> f.qualname().equals("Thread._bootstrap")), where);
        depths.add(depth);
      }
    }
    assertEquals(1, mains, rc + ": one main thread\n" + c.liveStacks());
    // Thread k recursed 10 * k + 1 times: each parked thread shows its own stack.
    depths.sort(null);
    assertEquals(IntStream.rangeClosed(1, depths.size()).map(k -> 10 * k + 1).boxed().toList(),
        depths, rc.toString());
  }

  /**
   * checkCase: the walks the kit replays name frames of the live stack, the same ones again and
   * concurrently, within bounds, and survive every read failing and truncated in turn.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void walksSurviveEveryReadFailingOrTruncated(RecordedCase rc) throws Exception {
    SnapshotCase c = rc.read();
    Conformance.CaseReport r;
    try {
      r = KIT.checkCase(c);
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + walkOrderNote(c), e);
    }
    assertTrue(r.walks() >= 1, r.toString());
    // The main thread's leaf walk alone names innermost, middle, worker, Job.run, <module>.
    assertTrue(r.runtimeFrames() >= 5, r.toString());
    assertTrue(r.maxReads() > 0 && r.faultsInjected() >= 2 * Math.min(r.maxReads(), 2000),
        r.toString());
  }

  /**
   * Plan coverage from each thread's own thread pointer. A snapshot holds what the live walk
   * read, and two loads of the plan are words the walk never reads, so the kit cannot decide
   * what follows them: a thread's gilstate slot (the walk reads one thread's, to check the glibc
   * layout once per process) and {@code datastack_chunk} (which only bounds the plan's frame
   * copy). Every other thread's plan stops at the first; the checked thread's runs through the
   * thread state and cframe copies, which must serve the walk's reads of them, and stops at the
   * second. Every gap must be one of these undecidable ones.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void capturePlanCoversTheWalksUpToWhatTheSnapshotCannotDecide(RecordedCase rc)
      throws Exception {
    SnapshotCase c = rc.read();
    int pythonThreads = (int) LiveText.threads(c.liveStacks()).values().stream()
        .filter(s -> !LiveText.pythonFrames(s).isEmpty()).count();
    PlanCoverage.Report p = KIT.planCoverage(c);
    String report = p + "\n" + String.join("\n", p.gaps().stream()
        .map(PlanCoverage.Gap::message).toList());

    // Every Python thread's evaluation loop frames gave frames of its live stack.
    assertTrue(p.checkedSegments() >= pythonThreads, report);
    for (PlanCoverage.Gap g : p.gaps()) {
      assertFalse(g.decidable(), g.message());
    }
    int slotLoad = loadStep(Layout.PY311, Plans.firstBlockSlot(0));
    int chunkLoad = loadStep(Layout.PY311, Layout.PY311.tstateDatastackChunk());
    assertEquals(slotLoad, loadStep(Layout.PY312, Plans.firstBlockSlot(0)));
    assertEquals(chunkLoad, loadStep(Layout.PY312, Layout.PY312.tstateDatastackChunk()));
    int framesCopy = copyStep(Layout.PY311, "py_frames");
    assertEquals(framesCopy, copyStep(Layout.PY312, "py_frames"));
    Set<Integer> stopped = new HashSet<>();
    int atChunk = 0;
    for (String s : p.planStops()) {
      Matcher m = STOP.matcher(s);
      assertTrue(m.matches(), "a plan stop the kit words otherwise: " + s);
      int step = Integer.parseInt(m.group(2));
      // After the frames: 3.12's loads of the interpreter and its GIL pointer, which the walk
      // never reads live (it reads the GIL only from the tick's copy).
      assertTrue((step == slotLoad || step == chunkLoad || step > framesCopy)
          && m.group(3).contains("mapped but not in the snapshot"), rc + ": the plan stopped"
          + " where the snapshot can decide it (a failed check or an unreadable load): " + s);
      stopped.add(Integer.valueOf(m.group(1)));
      atChunk += step == chunkLoad ? 1 : 0;
    }
    assertEquals(pythonThreads, stopped.size(), report);
    assertTrue(atChunk >= 1, "no plan got past a thread's gilstate slot: " + report);
    // The walk's reads of ts->cframe and cframe->current_frame came from the tick's copies.
    assertTrue(p.copies() >= 2 && p.coveredReads() >= 2, report);
  }

  /** The index of the plan's copy labelled {@code label} (keys below 32). */
  private static int copyStep(Layout layout, String label) {
    CapturePlan plan = Plans.forKey(layout, 0, 0);
    for (int i = 0; i < plan.steps().size(); i++) {
      if (plan.steps().get(i) instanceof CaptureStep.Copy c && c.label().equals(label)) {
        return i;
      }
    }
    throw new AssertionError("the plan copies nothing labelled " + label + ": " + plan);
  }

  /** The index of the plan's first load at {@code offset} (keys below 32). */
  private static int loadStep(Layout layout, long offset) {
    CapturePlan plan = Plans.forKey(layout, 0, 0);
    for (int i = 0; i < plan.steps().size(); i++) {
      if (plan.steps().get(i) instanceof CaptureStep.Load l && l.offset() == offset) {
        return i;
      }
    }
    throw new AssertionError("the plan loads nothing at offset " + offset + ": " + plan);
  }

  /**
   * Why a multi-threaded case can fail checkCase without a fault of the plug-in's: the kit
   * replays the threads it walks on a fresh instance, while the live walk of a thread after
   * another read less than a fresh instance reads (the layout check and the code objects' names
   * were done by the walk before).
   */
  private static String walkOrderNote(SnapshotCase c) {
    List<Integer> order = new ArrayList<>(LiveText.threads(c.liveStacks()).keySet());
    Integer main = null;
    for (var e : LiveText.threads(c.liveStacks()).entrySet()) {
      if (!LiveText.leadingRun(e.getValue()).isEmpty()) {
        main = e.getKey();
      }
    }
    if (main == null || order.isEmpty() || order.get(0).equals(main)) {
      return "";
    }
    return "\n(" + c + " walked thread " + order.get(0) + " before thread " + main + ", the one"
        + " in the evaluation loop: the live walk of " + main + " then read less than the kit's"
        + " fresh instance needs; record the case again, README.md \"Tests\")";
  }
}
