package dev.polystack.otel.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.plugin.api.Frame;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Parses the output back and checks it against the speedscope schema's rules. */
class SpeedscopeWriterTest {

  @Test
  void followsTheFileFormat() throws IOException {
    Map<String, Object> file = write(TestRecordings.service());
    assertEquals("https://www.speedscope.app/file-format-schema.json", file.get("$schema"));
    assertEquals("app-server (pid 4242)", file.get("name"));
    assertEquals(0L, file.get("activeProfileIndex"));
    assertTrue(((String) file.get("exporter")).startsWith("polystack "));

    List<Map<String, Object>> frames = list(map(file.get("shared")).get("frames"));
    Set<String> distinct = new HashSet<>();
    for (Map<String, Object> frame : frames) {
      assertTrue(frame.get("name") instanceof String, frame.toString());
      assertTrue(distinct.add(frame.toString()), "frame listed twice: " + frame);
    }
    assertEquals(10, frames.size(), frames.toString());
    assertTrue(frames.contains(Map.of("name", "compute (app.lua:17)", "file", "app.lua",
        "line", 17L)), frames.toString());
    assertTrue(frames.contains(Map.of("name", "libcodec.so+0x12040",
        "file", "/opt/demo/lib/libcodec.so")), frames.toString());

    List<Map<String, Object>> profiles = list(file.get("profiles"));
    assertEquals(List.of("app-server (tid 4242)", "worker-1 (tid 4250)"),
        profiles.stream().map(p -> p.get("name")).toList());
    assertEquals(List.of(8, 7), profiles.stream().map(p -> list(p.get("samples")).size()).toList());
    for (Map<String, Object> p : profiles) {
      assertEquals("sampled", p.get("type"));
      assertEquals("nanoseconds", p.get("unit"));
      List<List<Object>> samples = list(p.get("samples"));
      List<Long> weights = list(p.get("weights"));
      assertEquals(samples.size(), weights.size());
      long total = 0;
      for (long w : weights) {
        assertEquals(TestRecordings.PERIOD, w);
        total += w;
      }
      assertEquals(0L, p.get("startValue"));
      assertEquals(total, p.get("endValue"));
      for (List<Object> stack : samples) {
        assertTrue(!stack.isEmpty());
        for (Object index : stack) {
          assertTrue((Long) index >= 0 && (Long) index < frames.size(), "bad index " + index);
        }
      }
    }
    // Root first: every Lua sample starts at main and ends in compute.
    List<List<Long>> worker = list(profiles.get(1).get("samples"));
    List<String> first = new ArrayList<>();
    for (long i : worker.get(0)) {
      first.add((String) frames.get((int) i).get("name"));
    }
    assertEquals(List.of("main", "lua_pcall", "lj_BC_FUNCC", "handle_request (app.lua:42)",
        "compute (app.lua:17)"), first);
    assertEquals("[no frames]", frames.get((int) (long) worker.get(6).get(0)).get("name"));
  }

  @Test
  void namesSurviveJsonEscaping() throws IOException {
    String name = "quote\" back\\slash tab\t nl\n ctl\u0001 </script> \u00e9\u4e2d\ud83d\ude00";
    Frame frame = new Frame("luajit", 0, name, "a\"b.lua", 2, 1, "", Map.of());
    Recording r = new Recording(new TargetInfo(9, "/bin/x", List.of()), 0, 5, 5, "snapshot",
        List.of(), List.of(new Sample(9, "th\"read", 0, new StackTrace(List.of(frame)),
            Map.of())), Map.of());
    Map<String, Object> file = write(r);
    List<Map<String, Object>> frames = list(map(file.get("shared")).get("frames"));
    assertEquals(List.of(Map.of("name", name + " (a\"b.lua:2)", "file", "a\"b.lua", "line", 2L)),
        frames);
    assertEquals("th\"read (tid 9)", list(file.get("profiles")).get(0) instanceof Map<?, ?> m
        ? m.get("name") : null);
  }

  @Test
  void aSampleWeighsThePeriodsItStandsFor() throws IOException {
    List<Map<String, Object>> profiles = list(write(TestRecordings.carrying(4)).get("profiles"));
    Map<String, Object> p = profiles.get(0);
    assertEquals(List.of(TestRecordings.PERIOD, 4 * TestRecordings.PERIOD),
        list(p.get("weights")));
    assertEquals(5 * TestRecordings.PERIOD, p.get("endValue"));
  }

  @Test
  void threadsOfSeveralProcessesSayTheirProcess() throws IOException {
    Frame main = new Frame(Frame.NATIVE, 0x1000, "main", "", 0, 0, "", Map.of());
    StackTrace stack = new StackTrace(List.of(main));
    Recording r = new Recording(new TargetInfo(10, "/bin/a", List.of("/bin/a")), 0, 1, 1, "bpf",
        List.of(), List.of(
            new Sample(10, "a", 0, stack, Map.of("process.pid", "10",
                "process.executable.name", "a")),
            new Sample(20, "b", 0, stack, Map.of("process.pid", "20",
                "process.executable.name", "b"))), Map.of());
    List<Map<String, Object>> profiles = list(write(r).get("profiles"));
    assertEquals(List.of("process 10 (a): a (tid 10)", "process 20 (b): b (tid 20)"),
        profiles.stream().map(p -> p.get("name")).toList());
  }

  private static Map<String, Object> write(Recording r) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ProfileFormat.SPEEDSCOPE.writer().write(r, out);
    return map(MiniJson.parse(out.toString(StandardCharsets.UTF_8)));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(Object o) {
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  private static <T> List<T> list(Object o) {
    return (List<T>) o;
  }
}
