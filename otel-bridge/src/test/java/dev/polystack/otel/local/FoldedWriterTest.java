package dev.polystack.otel.local;

import static dev.polystack.otel.local.TestRecordings.CODEC_LINE;
import static dev.polystack.otel.local.TestRecordings.LUA_LINE;
import static dev.polystack.otel.local.TestRecordings.SYSCALL_LINE;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.plugin.api.Frame;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FoldedWriterTest {

  @Test
  void oneSortedLinePerStackWithCountsSummedOverThreads() throws IOException {
    String expected = String.join("\n",
        "[error: unwind_failed];read;do_syscall_64 2",
        "[no frames] 1",
        CODEC_LINE + " 3",
        LUA_LINE + " 9") + "\n";
    assertEquals(SYSCALL_LINE + " 2", expected.lines().findFirst().orElseThrow());
    assertEquals(expected, folded(TestRecordings.service()));
  }

  @Test
  void separatorsInsideLabelsCannotSplitFramesOrLines() throws IOException {
    Frame odd = new Frame("luajit", 0, "a;b\nc\r", "x;y.lua", 3, 1, "", Map.of());
    Frame main = new Frame(Frame.NATIVE, 0x1000, "main", "", 0, 0, "", Map.of());
    Recording r = new Recording(new TargetInfo(1, "/bin/x", List.of("/bin/x")), 0, 1, 1,
        "snapshot", List.of(),
        List.of(new Sample(1, "x", 0, new StackTrace(List.of(odd, main)), Map.of())), Map.of());
    assertEquals("main;a:b c  (x:y.lua:3) 1\n", folded(r));
  }

  @Test
  void aSampleCountsThePeriodsItStandsFor() throws IOException {
    // The second sample carries three ticks the sampler did not take before it.
    assertEquals("main 5\n", folded(TestRecordings.carrying(4)));
  }

  @Test
  void threadRootsKeepThreadsApartUnderTheirNames() throws IOException {
    String expected = String.join("\n",
        "app-server (tid 4242);" + CODEC_LINE + " 3",
        "app-server (tid 4242);" + LUA_LINE + " 5",
        "worker-1 (tid 4250);[error: unwind_failed];read;do_syscall_64 2",
        "worker-1 (tid 4250);[no frames] 1",
        "worker-1 (tid 4250);" + LUA_LINE + " 4") + "\n";
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ProfileFormat.FOLDED.writer(true).write(TestRecordings.service(), out);
    assertEquals(expected, out.toString(StandardCharsets.UTF_8));
  }

  private static String folded(Recording r) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ProfileFormat.FOLDED.writer().write(r, out);
    return out.toString(StandardCharsets.UTF_8);
  }
}
