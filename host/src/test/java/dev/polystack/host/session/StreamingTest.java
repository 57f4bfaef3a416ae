package dev.polystack.host.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.otel.model.HtlHash;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The interval hook the OTLP exporter streams from, on real runs of luajit in every mode. */
class StreamingTest {
  private record Call(Recording interval, IntervalListener.Totals totals, boolean last) {}

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void intervalsPartitionTheRunAndCarryHashedModules(boolean retain) throws Exception {
    Streamed run = record(RecordSession.Backend.exactly(RecordSession.Mode.PTRACE), retain);
    assertPartition(run, retain);
    ModuleInfo exe = run.result().recording().modules().stream()
        .filter(m -> m.path().equals(run.result().recording().target().executablePath()))
        .findFirst().orElseThrow();
    assertEquals(HtlHash.of(Path.of(exe.path())), exe.htlHash());
  }

  /**
   * bpf and perf modes stream from the host-wide pipeline: the same contract, and a record of one
   * process is that process's recording (no sample names its process, no per-process part).
   */
  @ParameterizedTest
  @ValueSource(strings = {"bpf", "perf"})
  void pipelineIntervalsPartitionTheRunToo(String mode) throws Exception {
    boolean retain = mode.equals("perf");
    Streamed run = record(RecordSession.Backend.exactly(RecordSession.Mode.parse(mode)), retain);
    assertPartition(run, retain);
    RecordSession.Result result = run.result();
    assertTrue(result.processes().isEmpty(), "one process: no part per process");
    assertTrue(run.calls().stream().flatMap(c -> c.interval().samples().stream())
        .noneMatch(x -> x.attributes().containsKey("process.pid")), "no process label");
    ModuleInfo exe = run.calls().stream().flatMap(c -> c.interval().modules().stream())
        .filter(m -> m.path().equals(result.recording().target().executablePath()))
        .findFirst().orElseThrow();
    assertEquals(HtlHash.of(Path.of(exe.path())), exe.htlHash());
    assertTrue(result.targetGone() && result.targetExit() != null
        && result.targetExit().exited() && result.targetExit().exitCode() == 0,
        "the launched program's own exit: " + result.targetExit());
  }

  private record Streamed(RecordSession.Result result, List<Call> calls) {}

  /** A second of a busy luajit, launched and streamed in 200 ms intervals. */
  private static Streamed record(RecordSession.Backend backend, boolean retain)
      throws Exception {
    var plugins = new PluginLoader().load(List.of());
    RecordSession session = new RecordSession(ProcFs.system(), plugins,
        new PluginGuard(msg -> {}), msg -> {});
    List<Call> calls = new CopyOnWriteArrayList<>();
    session.stream(Duration.ofMillis(200), (r, t, last) -> calls.add(new Call(r, t, last)),
        retain);
    SamplingOptions options = new SamplingOptions(99, 0, false, Set.of(),
        SamplingOptions.DEFAULT_MAX_DEPTH, SamplingOptions.DEFAULT_STACK_BYTES);
    RecordSession.Result result = session.launch(List.of("luajit", "-e",
        "local t = os.clock() while os.clock() - t < 1.0 do end"), backend, options,
        () -> false, (s, e, l, t) -> {});
    return new Streamed(result, calls);
  }

  /** Every sample streamed once, in contiguous intervals, the last flagged and equal to the end. */
  private static void assertPartition(Streamed run, boolean retain) {
    List<Call> calls = run.calls();
    Recording whole = run.result().recording();
    assertTrue(calls.size() >= 2, "expected several intervals, got " + calls.size());
    assertTrue(calls.get(calls.size() - 1).last());
    assertFalse(calls.subList(0, calls.size() - 1).stream().anyMatch(Call::last));
    long streamed = calls.stream().mapToLong(c -> c.interval().samples().size()).sum();
    assertTrue(streamed > 0);
    assertEquals(run.result().summary().samples(), streamed, "every sample exactly once");
    assertEquals(retain ? streamed : 0, whole.samples().size(), "samples kept for the end");
    assertEquals(streamed, calls.get(calls.size() - 1).totals().samples());
    assertEquals(whole.losses(), calls.get(calls.size() - 1).totals().losses());
    for (int i = 1; i < calls.size(); i++) {
      assertEquals(calls.get(i - 1).interval().endEpochNanos(),
          calls.get(i).interval().startEpochNanos(), "intervals must be contiguous");
    }
  }
}
