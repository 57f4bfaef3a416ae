package dev.polystack.host.session;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.polystack.otel.model.FrameLabels;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.plugin.api.Frame;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RecordingMergerTest {

  private static RecordSession.Result part(int pid, String exe, ModuleInfo module, long address,
      long at, Map<String, Long> losses, long pauses, long meanPause) {
    Frame frame = new Frame(Frame.NATIVE, address, "", "", 0, 0, "", Map.of());
    Recording r = new Recording(new TargetInfo(pid, exe, List.of(exe)), at, at + 10, 1, "bpf",
        List.of(module), List.of(new Sample(pid, "t", at, new StackTrace(List.of(frame)),
            Map.of("vmstate", "x"))), losses);
    RecordSession.Summary s = new RecordSession.Summary(1, 1, 1, Map.of(), losses, pauses,
        meanPause, meanPause, meanPause, meanPause, 10.0);
    return new RecordSession.Result(r, s, null, false, true);
  }

  @Test
  void samplesSayTheirProcessAndOverlappingModulesKeepTheirOwnLabels() {
    // Two programs mapped at the same place (non-PIE): the second's frame must not be labelled
    // from the first's table.
    ModuleInfo a = new ModuleInfo(0x400000, 0x401000, 0, "/bin/a", "");
    ModuleInfo b = new ModuleInfo(0x400000, 0x402000, 0x1000, "/bin/b", "");
    Recording merged = RecordingMerger.merge(List.of(
        part(10, "/bin/a", a, 0x400010, 200, Map.of("late_tick", 1L), 0, 0).recording(),
        part(20, "/bin/b", b, 0x400020, 100, Map.of("late_tick", 2L), 0, 0).recording()));

    assertEquals(List.of(a), merged.modules());
    assertEquals(Map.of("late_tick", 3L), merged.losses());
    assertEquals(100, merged.startEpochNanos());
    assertEquals(210, merged.endEpochNanos());
    assertEquals(10, merged.target().pid());
    Sample first = merged.samples().get(0); // time order: b's came first
    assertEquals(Map.of("vmstate", "x", "process.pid", "20", "process.executable.name", "b"),
        first.attributes());
    assertEquals("b+0x1020", FrameLabels.label(first.stack().leaf(), merged));
    Sample second = merged.samples().get(1);
    assertEquals("10", second.attributes().get("process.pid"));
    assertEquals("a+0x10", FrameLabels.label(second.stack().leaf(), merged));
  }

  @Test
  void summaryAddsCountsAndWeighsTheMeanPause() {
    ModuleInfo m = new ModuleInfo(0x1000, 0x2000, 0, "/bin/a", "");
    RecordSession.Summary s = RecordingMerger.summary(List.of(
        part(1, "/bin/a", m, 0x1000, 0, Map.of(), 1, 100),
        part(2, "/bin/a", m, 0x1000, 0, Map.of(), 3, 500)), Map.of("x", 1L));
    assertEquals(2, s.samples());
    assertEquals(2, s.threads());
    assertEquals(4, s.pauseCount());
    assertEquals(400, s.meanPauseNanos());
    assertEquals(500, s.p99PauseNanos());
    assertEquals(Map.of("x", 1L), s.losses());
    assertEquals(10.0, s.achievedHz(), 1e-9);
  }
}
