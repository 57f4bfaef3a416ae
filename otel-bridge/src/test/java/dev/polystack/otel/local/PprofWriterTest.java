package dev.polystack.otel.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.model.Recording;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reads the written profile with the real {@code go tool pprof}, the reference reader. */
class PprofWriterTest {
  // The first `go tool pprof` of a Go installation compiles the tool, which takes a while.
  private static final Duration TIMEOUT = Duration.ofMinutes(5);
  private static final Pattern TOP_ROW =
      Pattern.compile("^\\s*(\\d+)(?:ns)?\\s+\\S+%\\s+\\S+%\\s+(\\d+)(?:ns)?\\s+\\S+%\\s+(.+)$");

  @TempDir
  static Path dir;
  static Path profile;
  static String go;

  @BeforeAll
  static void writeProfile() throws IOException {
    go = findGo();
    profile = dir.resolve("profile.pb.gz");
    try (OutputStream out = Files.newOutputStream(profile)) {
      ProfileFormat.PPROF.writer().write(TestRecordings.service(), out);
    }
  }

  @Test
  void topCountsEveryFrameOfEverySample() throws Exception {
    Proc top = pprof("-top", "-nodecount=50", "-sample_index=samples");
    assertTrue(top.stdout().contains("Total samples = 15"), top::toString);
    assertTrue(top.stdout().contains("File: app-server"), top::toString);
    assertTrue(top.stdout().contains("Type: samples"), top::toString);
    Map<String, List<Long>> rows = topRows(top.stdout());
    // name -> [flat, cum]
    assertEquals(List.of(9L, 9L), rows.get("compute"), top::toString);
    assertEquals(List.of(0L, 9L), rows.get("handle_request"), top::toString);
    assertEquals(List.of(0L, 9L), rows.get("lj_BC_FUNCC"), top::toString);
    assertEquals(List.of(0L, 12L), rows.get("lua_pcall"), top::toString);
    assertEquals(List.of(0L, 12L), rows.get("main"), top::toString);
    // No symbol: pprof names the frame by its mapping instead.
    assertEquals(List.of(3L, 3L), rows.get("[libcodec.so]"), top::toString);
    assertEquals(List.of(2L, 2L), rows.get("do_syscall_64"), top::toString);
    assertEquals(List.of(0L, 2L), rows.get("read"), top::toString);
    assertEquals(List.of(0L, 2L), rows.get("[error: unwind_failed]"), top::toString);
    assertEquals(List.of(1L, 1L), rows.get("[no frames]"), top::toString);
    assertEquals(10, rows.size(), top::toString);
  }

  @Test
  void cpuIsTheDefaultSampleTypeLikeTheFlameGraph() throws Exception {
    // No -sample_index: what `go tool pprof -top` shows first must weigh samples as the flame
    // graph does, by the periods they stand for.
    Proc top = pprof("-top", "-unit=ns");
    assertTrue(top.stdout().contains("Type: cpu"), top::toString);
    assertTrue(top.stdout().contains("Total samples = 150000000ns"), top::toString);
  }

  @Test
  void cpuValuesAreCountsTimesThePeriod() throws Exception {
    Proc top = pprof("-top", "-sample_index=cpu", "-unit=ns");
    assertTrue(top.stdout().contains("Type: cpu"), top::toString);
    assertTrue(top.stdout().contains("Total samples = 150000000ns"), top::toString);
    Map<String, List<Long>> rows = topRows(top.stdout());
    assertEquals(List.of(90_000_000L, 90_000_000L), rows.get("compute"), top::toString);
    assertEquals(List.of(0L, 120_000_000L), rows.get("main"), top::toString);
  }

  @Test
  void samplesCountWhatWasTakenAndCpuTheTimeItStandsFor() throws Exception {
    assertTotals(TestRecordings.carrying(4), "Total samples = 2", "Total samples = 50000000ns");
  }

  @Test
  void mergedSamplesCountEverySampleTheyStandFor() throws Exception {
    assertTotals(TestRecordings.merging(3, 5), "Total samples = 4", "Total samples = 60000000ns");
  }

  @Test
  void aPluginsSampleTypeIsOneMoreColumnAfterTheCpuOnes() throws Exception {
    Path file = dir.resolve("plugin-values.pb.gz");
    try (OutputStream out = Files.newOutputStream(file)) {
      ProfileFormat.PPROF.writer().write(TestRecordings.pluginValues(), out);
    }
    Proc held = Proc.run(TIMEOUT, dir, go, "tool", "pprof", "-top", "-sample_index=x.held",
        file.toString()).assertSuccess();
    assertTrue(held.stdout().contains("Type: x.held"), held::toString);
    assertTrue(held.stdout().contains("Total samples = 3"), held::toString);
    Map<String, List<Long>> rows = topRows(held.stdout());
    assertEquals(List.of(3L, 3L), rows.get("spin"), held::toString);
    // The CPU columns are as without it, and stay the default.
    assertTotals(TestRecordings.pluginValues(), "Total samples = 5", "Total samples = 60000000ns");
    Proc top = Proc.run(TIMEOUT, dir, go, "tool", "pprof", "-top", file.toString())
        .assertSuccess();
    assertTrue(top.stdout().contains("Type: cpu"), top::toString);
  }

  /** go tool pprof's totals of {@code r} as pprof, by samples and by cpu in nanoseconds. */
  private static void assertTotals(Recording r, String samplesTotal, String cpuTotal) throws Exception {
    Path file = dir.resolve("totals.pb.gz");
    try (OutputStream out = Files.newOutputStream(file)) {
      ProfileFormat.PPROF.writer().write(r, out);
    }
    Proc samples = Proc.run(TIMEOUT, dir, go, "tool", "pprof", "-top", "-sample_index=samples",
        file.toString()).assertSuccess();
    assertTrue(samples.stdout().contains(samplesTotal), samples::toString);
    Proc cpu = Proc.run(TIMEOUT, dir, go, "tool", "pprof", "-top", "-sample_index=cpu",
        "-unit=ns", file.toString()).assertSuccess();
    assertTrue(cpu.stdout().contains(cpuTotal), cpu::toString);
  }

  @Test
  void tracesKeepThreadsAndAttributesApartAndSumIdenticalSamples() throws Exception {
    Proc traces = pprof("-traces", "-sample_index=samples");
    TreeSet<String> expected = new TreeSet<>(List.of(
        "luajit.vmstate=interp thread.id=4242 thread.name=app-server"
            + " | 5 | compute;handle_request;lj_BC_FUNCC;lua_pcall;main",
        "luajit.trace=7 luajit.vmstate=jit thread.id=4250 thread.name=worker-1"
            + " | 4 | compute;handle_request;lj_BC_FUNCC;lua_pcall;main",
        "thread.id=4242 thread.name=app-server | 3 | [libcodec.so];lua_pcall;main",
        "thread.id=4250 thread.name=worker-1 | 2 | do_syscall_64;read;[error: unwind_failed]",
        "thread.id=4250 thread.name=worker-1 | 1 | [no frames]"));
    assertEquals(expected, traces(traces.stdout()), traces::toString);
  }

  @Test
  void rawShowsTablesAsWritten() throws Exception {
    Proc raw = pprof("-raw");
    String out = raw.stdout();
    for (String expected : List.of(
        "PeriodType: cpu nanoseconds",
        "Period: 10000000",
        "Time: 2026-01-01 00:00:00 +0000 UTC",
        "samples/count cpu/nanoseconds[dflt]",
        "Comment: mode: ptrace",
        "Comment: lost: dropped.timeout=2",
        "Comment: target: pid 4242 /opt/demo/bin/app-server --config /etc/demo/app.conf",
        // Lua frames: function, chunk, line and the function's first line (s=).
        "0x0 compute app.lua:17:0 s=15",
        "0x0 handle_request app.lua:42:0 s=40",
        "0x401234 M=1 main :0:0 s=0",
        // The unsymbolized frame: an address in its mapping and nothing else.
        "0x7f1000210040 M=3 \n",
        // Mapping 1 is the executable; symbolized mappings are marked so pprof keeps names.
        "1: 0x400000/0x480000/0x0 /opt/demo/bin/app-server"
            + " 0123456789abcdef0123456789abcdef01234567 [FN]",
        "2: 0x7f1000001000/0x7f1000090000/0x1000 /opt/demo/lib/libluajit-5.1.so.2  [FN]",
        "3: 0x7f1000200000/0x7f1000300000/0x2000 /opt/demo/lib/libcodec.so")) {
      assertTrue(out.contains(expected), () -> "missing '" + expected + "' in\n" + raw);
    }
    String locations = out.substring(out.indexOf("Locations\n"), out.indexOf("Mappings\n"));
    // Nine distinct frames and the [no frames] stand-in, each once however often sampled.
    assertEquals(11, locations.lines().count(), locations);
  }

  @Test
  void commentsListOnlyLossesAsLostAndCaptureFiguresApart() throws Exception {
    Path bpf = dir.resolve("bpf.pb.gz");
    try (OutputStream out = Files.newOutputStream(bpf)) {
      ProfileFormat.PPROF.writer().write(TestRecordings.bpf(Map.of("capture_plan_refused", 1L)),
          out);
    }
    String raw = Proc.run(TIMEOUT, dir, go, "tool", "pprof", "-raw", bpf.toString())
        .assertSuccess().stdout();
    List<String> comments = raw.lines().filter(l -> l.startsWith("Comment: ")).toList();
    assertEquals(List.of("Comment: lost: capture_plan_refused=1"),
        comments.stream().filter(l -> l.startsWith("Comment: lost")).toList(), raw);
    assertEquals(List.of("Comment: tick capture: plans=2", "Comment: tick capture: records=298",
        "Comment: tick capture: ticks=298"),
        comments.stream().filter(l -> l.contains("tick capture")).toList(), raw);
    assertEquals(1, comments.stream().filter(l -> l.matches("Comment: rate: \\d+ Hz requested,"
        + " on-CPU rate not measured, [\\d.]+ Hz wall per thread")).count(), raw);
  }

  private static Proc pprof(String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(go, "tool", "pprof"));
    command.addAll(List.of(args));
    command.add(profile.toString());
    return Proc.run(TIMEOUT, dir, command.toArray(String[]::new)).assertSuccess();
  }

  private static Map<String, List<Long>> topRows(String top) {
    Map<String, List<Long>> rows = new TreeMap<>();
    for (String line : top.lines().toList()) {
      Matcher m = TOP_ROW.matcher(line);
      if (m.matches()) {
        rows.put(m.group(3).trim(),
            List.of(Long.parseLong(m.group(1)), Long.parseLong(m.group(2))));
      }
    }
    return rows;
  }

  /** Each trace as "sorted labels | count | frames leaf first". */
  private static TreeSet<String> traces(String text) {
    TreeSet<String> traces = new TreeSet<>();
    for (String block : text.split("-----------\\+-+\n")) {
      TreeSet<String> labels = new TreeSet<>();
      List<String> frames = new ArrayList<>();
      String count = null;
      for (String line : block.lines().toList()) {
        Matcher label = Pattern.compile("^\\s*([\\w.]+):\\s+(.*)$").matcher(line);
        Matcher first = Pattern.compile("^\\s*(\\d+)\\s{3}(.+)$").matcher(line);
        if (count == null && first.matches()) {
          count = first.group(1);
          frames.add(first.group(2).trim());
        } else if (count != null && !line.isBlank()) {
          frames.add(line.trim());
        } else if (label.matches()) {
          labels.add(label.group(1) + "=" + label.group(2).trim());
        }
      }
      if (count != null) {
        traces.add(String.join(" ", labels) + " | " + count + " | " + String.join(";", frames));
      }
    }
    return traces;
  }

  /** go on the PATH or in its default place; missing Go fails, since it is how we check. */
  static String findGo() {
    Stream<Path> candidates = Stream.concat(
        Stream.of(System.getenv().getOrDefault("PATH", "").split(":"))
            .filter(p -> !p.isEmpty()).map(p -> Path.of(p, "go")),
        Stream.of(Path.of("/usr/local/go/bin/go"), Path.of("/usr/lib/go/bin/go")));
    return candidates.filter(Files::isExecutable).findFirst().map(Path::toString)
        .orElseThrow(() -> new AssertionError("go is not installed (looked on PATH and in"
            + " /usr/local/go/bin): PprofWriterTest checks the output with `go tool pprof`;"
            + " install Go (e.g. apt-get install golang-go) to run it"));
  }
}
