package dev.polystack.host.embed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.testutil.TestTarget;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.profiles.v1development.ResourceProfiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedding API against the real kernel and a real busy program: intervals reach the
 * listener with the program's samples (as recordings and as one OTLP request), stop() cuts and
 * delivers the interval in progress, a listener that throws is counted and called again, a
 * slow listener costs dropped intervals (counted), never the capture; and every setting is
 * validated with a message that names it.
 */
class ProfilerTest {
  private static final long WAIT_MILLIS = 60_000;

  @TempDir Path tmp;

  @BeforeAll
  static void bpfAvailable() {
    String disabled = System.getenv(BpfSupport.DISABLE_ENV);
    assumeTrue(disabled == null || disabled.isEmpty(), "BPF disabled by the environment");
  }

  @Test
  void checkFindsNothingMissingHere() {
    assertEquals(Optional.empty(), Profiler.builder().build().check());
  }

  @Test
  void intervalsCarryTheSelectedProgramsSamplesAsRecordingsAndOtlp() throws Exception {
    try (TestTarget target = TestTarget.start("loop")) {
      int pid = target.pid();
      List<ProfileInterval> seen = new CopyOnWriteArrayList<>();
      Profiler profiler = Profiler.builder().selection(Selection.ofPids(pid)).rateHz(99)
          .interval(Duration.ofMillis(300)).build();
      ProfilerStats stats;
      try (ProfilingSession session = profiler.start(seen::add)) {
        assertTrue(session.isRunning());
        await("an interval with samples of " + pid, () -> seen.stream()
            .anyMatch(i -> samplesOf(i, pid) > 0));
        stats = session.stop();
        assertFalse(session.isRunning());
        assertEquals(Optional.empty(), session.failure());
        assertEquals(stats, session.stop(), "stop is idempotent");
      }
      ProfileInterval withSamples = seen.stream().filter(i -> samplesOf(i, pid) > 0)
          .findFirst().orElseThrow();
      ProcessRecording process = withSamples.processes().stream()
          .filter(p -> p.pid() == pid).findFirst().orElseThrow();
      assertEquals("target", process.executableName());
      assertEquals((long) pid, process.resource().get("process.pid"));
      ExportProfilesServiceRequest request = withSamples.toOtlpRequest();
      assertEquals(withSamples.processes().size(), request.getResourceProfilesCount());
      assertTrue(request.getResourceProfilesList().stream()
          .anyMatch(rp -> pidOf(rp) == pid), request.toString());
      assertTrue(seen.get(seen.size() - 1).last(), "the last interval comes last");
      assertEquals(1, seen.stream().filter(ProfileInterval::last).count());
      for (int i = 0; i < seen.size(); i++) {
        assertEquals(i, seen.get(i).sequence(), "intervals in order, none dropped");
      }
      assertEquals(seen.size(), stats.intervalsDelivered());
      assertEquals(0, stats.intervalsDropped());
      assertEquals(0, stats.listenerFailures());
      long delivered = seen.stream().mapToLong(ProfileInterval::samples).sum();
      assertEquals(stats.samples(), delivered, "every sample walked reached the listener");
      assertTrue("RS".indexOf(TestTarget.state(pid)) >= 0, "the target runs on");
    }
  }

  @Test
  void stopCutsAndDeliversTheIntervalInProgress() throws Exception {
    try (TestTarget target = TestTarget.start("loop")) {
      int pid = target.pid();
      List<ProfileInterval> seen = new CopyOnWriteArrayList<>();
      Profiler profiler = Profiler.builder().selection(Selection.ofPids(pid)).rateHz(99)
          .interval(Duration.ofHours(1)).build();
      ProfilerStats stats;
      try (ProfilingSession session = profiler.start(seen::add)) {
        long ticks = cpuTicks(pid);
        await("the target to run for 0.3 s of CPU", () -> cpuTicks(pid) >= ticks + 30);
        assertTrue(seen.isEmpty(), "no interval is due before an hour");
        stats = session.stop();
      }
      assertEquals(1, seen.size(), "stop delivered the interval in progress before it returned");
      ProfileInterval only = seen.get(0);
      assertTrue(only.last());
      assertTrue(samplesOf(only, pid) > 0, only.toString());
      assertEquals(stats.samples(), only.samples());
      assertEquals(1, stats.intervalsDelivered());
    }
  }

  @Test
  void aListenerThatThrowsIsCountedAndCalledAgain() throws Exception {
    try (TestTarget target = TestTarget.start("loop")) {
      List<String> warnings = new CopyOnWriteArrayList<>();
      List<Long> calls = new CopyOnWriteArrayList<>();
      Profiler profiler = Profiler.builder().selection(Selection.ofPids(target.pid()))
          .interval(Duration.ofMillis(100)).warnings(warnings::add).build();
      ProfilerStats stats;
      try (ProfilingSession session = profiler.start(interval -> {
        calls.add(interval.sequence());
        throw new IllegalStateException("vendor bug");
      })) {
        await("three intervals", () -> calls.size() >= 3);
        assertTrue(session.isRunning(), "the session survives its listener");
        stats = session.stop();
      }
      assertEquals(calls.size(), stats.listenerFailures());
      assertEquals(calls.size(), stats.intervalsDelivered());
      assertEquals(1, warnings.stream().filter(w -> w.contains("vendor bug")).count(),
          "reported once: " + warnings);
    }
  }

  @Test
  void aSlowListenerCostsCountedDropsNotTheCapture() throws Exception {
    try (TestTarget target = TestTarget.start("loop")) {
      CountDownLatch release = new CountDownLatch(1);
      List<ProfileInterval> seen = new CopyOnWriteArrayList<>();
      Profiler profiler = Profiler.builder().selection(Selection.ofPids(target.pid()))
          .interval(Duration.ofMillis(100)).listenerQueue(1).build();
      ProfilerStats stats;
      try (ProfilingSession session = profiler.start(interval -> {
        seen.add(interval);
        release.await();
      })) {
        await("an interval dropped", () -> session.stats().intervalsDropped() > 0);
        release.countDown();
        stats = session.stop();
      }
      ProfileInterval last = seen.get(seen.size() - 1);
      assertTrue(last.last(), "the last interval waits for room");
      assertEquals(last.sequence() + 1, stats.intervalsDelivered() + stats.intervalsDropped(),
          "every interval cut is delivered or dropped: " + stats);
      assertEquals(seen.size(), stats.intervalsDelivered());
    }
  }

  @Test
  void aListenerMayStopItsOwnSession() throws Exception {
    try (TestTarget target = TestTarget.start("loop")) {
      CompletableFuture<ProfilingSession> started = new CompletableFuture<>();
      List<ProfileInterval> seen = new CopyOnWriteArrayList<>();
      Profiler profiler = Profiler.builder().selection(Selection.ofPids(target.pid()))
          .interval(Duration.ofMillis(100)).build();
      try (ProfilingSession session = profiler.start(interval -> {
        seen.add(interval);
        started.get().stop();
      })) {
        started.complete(session);
        await("the last interval", () -> seen.stream().anyMatch(ProfileInterval::last));
        ProfilerStats stats = session.stop();
        assertFalse(session.isRunning());
        assertEquals(seen.size(), stats.intervalsDelivered());
        assertEquals(0, stats.intervalsDropped());
      }
    }
  }

  @Test
  void twoSessionsRunAtOnceEachWithItsOwnCapture() throws Exception {
    try (TestTarget first = TestTarget.start("loop");
        TestTarget second = TestTarget.start("loop")) {
      List<ProfileInterval> a = new CopyOnWriteArrayList<>();
      List<ProfileInterval> b = new CopyOnWriteArrayList<>();
      Profiler.Builder builder = Profiler.builder().interval(Duration.ofMillis(200)).rateHz(99);
      try (ProfilingSession sa = builder.selection(Selection.ofPids(first.pid())).build()
              .start(a::add);
          ProfilingSession sb = builder.selection(Selection.ofPids(second.pid())).build()
              .start(b::add)) {
        await("samples of both programs", () -> a.stream().anyMatch(i -> samplesOf(i,
            first.pid()) > 0) && b.stream().anyMatch(i -> samplesOf(i, second.pid()) > 0));
        sa.stop();
        assertTrue(sb.isRunning(), "stopping one session leaves the other running");
      }
      assertTrue(a.stream().allMatch(i -> samplesOf(i, second.pid()) == 0
          && i.processes().size() <= 1), "each session has its own selection");
      assertTrue(b.stream().allMatch(i -> samplesOf(i, first.pid()) == 0));
    }
  }

  @Test
  void whatCannotRunSaysWhyInOneLine() throws Exception {
    Profiler missingCgroup = Profiler.builder()
        .selection(Selection.byCgroup("polystack-no-such-cgroup")).build();
    String why = missingCgroup.check().orElseThrow();
    assertTrue(why.startsWith("cgroup polystack-no-such-cgroup: no such cgroup"), why);
    ProfilerException e = assertThrows(ProfilerException.class,
        () -> missingCgroup.start(interval -> { }));
    assertEquals("cannot profile: " + why, e.getMessage());

    Path notADirectory = Files.writeString(tmp.resolve("plugin.jar"), "");
    ProfilerException plugins = assertThrows(ProfilerException.class,
        () -> Profiler.builder().addPluginDirectory(notADirectory).build()
            .start(interval -> { }));
    assertEquals("cannot load plug-ins: plug-in directory " + notADirectory + ": not a"
        + " directory; pass the directory that holds the jar, not the jar itself",
        plugins.getMessage());
    assertFalse(plugins.getMessage().contains("\n"));
  }

  @Test
  void settingsAreValidatedWithTheirName() {
    assertMessage("rate 0 Hz", () -> Profiler.builder().rateHz(0).build());
    assertMessage("rate 1001 Hz", () -> Profiler.builder().rateHz(1001).build());
    assertMessage("interval PT0.05S",
        () -> Profiler.builder().interval(Duration.ofMillis(50)).build());
    assertMessage("maxProcesses 0", () -> Profiler.builder().maxProcesses(0).build());
    assertMessage("maxIntervalSamples 0", () -> Profiler.builder().maxIntervalSamples(0).build());
    assertMessage("listenerQueue 0", () -> Profiler.builder().listenerQueue(0).build());
    assertMessage("pid -3", () -> Selection.ofPids(-3));
    assertMessage("match (: not a regular expression", () -> Selection.byMatch("("));
    assertMessage("comm and cgroup", () -> Selection.byComm("  "));
    assertTrue(Selection.hostWide().isHostWide());
    assertFalse(Selection.byComm("nginx").withPids(1).isHostWide());
    assertEquals(Selection.byComm("nginx").withCgroup("a"), Selection.byCgroup("a")
        .withComm("nginx"));
  }

  private static void assertMessage(String start, Runnable build) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, build::run);
    assertTrue(e.getMessage().startsWith(start), e.getMessage());
  }

  private static long samplesOf(ProfileInterval interval, int pid) {
    return interval.processes().stream().filter(p -> p.pid() == pid)
        .mapToLong(ProcessRecording::samples).sum();
  }

  private static long pidOf(ResourceProfiles rp) {
    for (KeyValue kv : rp.getResource().getAttributesList()) {
      if (kv.getKey().equals("process.pid")) {
        return kv.getValue().getIntValue();
      }
    }
    return -1;
  }

  /** utime + stime of the process, in clock ticks (USER_HZ, 100 on x86-64). */
  private static long cpuTicks(int pid) throws IOException {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  private interface Condition {
    boolean holds() throws Exception;
  }

  private static void await(String what, Condition condition) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS);
    while (!condition.holds()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no " + what + " within " + WAIT_MILLIS + " ms");
      }
      Thread.sleep(20);
    }
  }
}
