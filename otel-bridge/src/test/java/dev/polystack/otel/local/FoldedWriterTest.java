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
  void samplesThatNameTheirProcessStartUnderItBeforeTheirThread() throws IOException {
    Frame main = new Frame(Frame.NATIVE, 0x1000, "main", "", 0, 0, "", Map.of());
    StackTrace stack = new StackTrace(List.of(main));
    Recording r = new Recording(new TargetInfo(10, "/bin/a", List.of("/bin/a")), 0, 1, 1,
        "bpf", List.of(), List.of(
            new Sample(10, "a", 0, stack, Map.of("process.pid", "10",
                "process.executable.name", "a")),
            new Sample(20, "b", 0, stack, Map.of("process.pid", "20",
                "process.executable.name", "b;x")),
            new Sample(20, "b", 1, stack, Map.of("process.pid", "20",
                "process.executable.name", "b;x"))), Map.of());
    assertEquals("process 10 (a);main 1\nprocess 20 (b:x);main 2\n", folded(r));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ProfileFormat.FOLDED.writer(true).write(r, out);
    assertEquals("process 10 (a);a (tid 10);main 1\nprocess 20 (b:x);b (tid 20);main 2\n",
        out.toString(StandardCharsets.UTF_8));
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
