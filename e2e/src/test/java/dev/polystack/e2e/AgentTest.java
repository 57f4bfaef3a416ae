package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.profiles.v1development.ProfilesDictionary;
import io.opentelemetry.proto.profiles.v1development.ResourceProfiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code polystack agent} against a real Collector: processes started after the agent appear as
 * resources of their own with their frames (C and Lua), a program that execs into luajit is
 * described anew, short-lived processes are seen from the kernel's events, a Collector that is
 * down and then up gets the data once up (every sample sent or counted as dropped), and SIGTERM
 * flushes the last interval and exits 0.
 */
class AgentTest {
  @TempDir Path tmp;

  /** The Lua workload: {@code hot} takes about nine tenths of the time. */
  private static final String LUA = """
      local function hot(n) local s = 0 for i = 1, n do s = s + (i * 7) % 13 end return s end
      local function cold(n) local s = 0 for i = 1, n do s = s + (i * 3) % 11 end return s end
      while true do hot(90000) cold(10000) end
      """;

  @Test
  void processesStartedAfterTheAgentAreResourcesWithTheirFramesAndSigtermFlushes()
      throws Exception {
    try (Collector collector = Collector.start();
        Distribution.Running agent = startAgent(collector.grpcEndpoint(), "1s")) {
      awaitStarted(agent);
      Path lua = Files.writeString(tmp.resolve("hot.lua"), LUA);
      Process c = new ProcessBuilder(Workloads.binary("hot_cold").toString())
          .redirectErrorStream(true).start();
      Process luajit = new ProcessBuilder("luajit", lua.toString()).redirectErrorStream(true)
          .start();
      try {
        Awaits.until("both programs' hot frames at the Collector", 60_000, () -> {
          Map<Long, Set<String>> frames = framesByPid(collector.profiles());
          return frames.getOrDefault(c.pid(), Set.of()).contains("hot")
              && frames.getOrDefault(luajit.pid(), Set.of()).contains("hot");
        });
      } finally {
        c.destroy();
        luajit.destroy();
      }
      List<ExportProfilesServiceRequest> requests = collector.profiles();
      Map<Long, Map<String, String>> byPid = new HashMap<>();
      for (ExportProfilesServiceRequest r : requests) {
        for (ResourceProfiles rp : r.getResourceProfilesList()) {
          List<KeyValue> a = rp.getResource().getAttributesList();
          Map<String, String> named = new HashMap<>();
          for (String key : List.of("process.executable.name", "service.name", "host.id",
              "process.command_line")) {
            String v = Collector.attribute(r.getDictionary(), a, key);
            if (v != null) {
              named.put(key, v);
            }
          }
          byPid.put(pid(r.getDictionary(), a), named);
        }
      }
      Map<String, String> cResource = byPid.get(c.pid());
      assertEquals("hot_cold", cResource.get("process.executable.name"));
      assertEquals("hot_cold", cResource.get("service.name"));
      assertEquals(Files.readString(Path.of("/etc/machine-id")).strip(),
          cResource.get("host.id"));
      assertEquals(null, cResource.get("process.command_line"),
          "command lines only with --command-line");
      assertEquals("luajit", byPid.get(luajit.pid()).get("process.executable.name"));
      assertFalse(byPid.containsKey(agent.pid()), "the agent profiled itself");
      for (long pid : byPid.keySet()) {
        assertFalse(isKernelThread(pid), "kernel thread " + pid + " has a resource");
      }

      agent.signal("TERM");
      Distribution.Result r = agent.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      assertTrue(r.stderr().contains("agent: "), r.stderr());
      Awaits.until("the agent's health metrics", 20_000, () ->
          healthCounter(collector.metrics(), "polystack.samples") > 0
              && healthCounter(collector.metrics(), "polystack.agent.processes.seen") >= 2);
    }
  }

  @Test
  void sigtermSendsTheIntervalInProgressAndExitsZero() throws Exception {
    try (Collector collector = Collector.start();
        Distribution.Running agent = startAgent(collector.grpcEndpoint(), "10m")) {
      awaitStarted(agent);
      Process c = new ProcessBuilder(Workloads.binary("hot_cold").toString())
          .redirectErrorStream(true).start();
      Distribution.Result r;
      try {
        Awaits.cpuTicks(c.pid(), 100, 30_000); // a second of CPU: about 20 ticks at 20 Hz
        assertEquals(0, collector.profiles().size(), "nothing is due before the interval ends");
        agent.signal("TERM");
        r = agent.await(60);
        assertEquals(0, r.exitCode(), r.stderr());
      } finally {
        c.destroy();
      }
      try {
        Awaits.until("the flushed interval at the Collector", 30_000, () ->
            framesByPid(collector.profiles()).getOrDefault(c.pid(), Set.of()).contains("hot"));
      } catch (AssertionError e) {
        throw new AssertionError(e.getMessage() + "; agent:\n" + r.stderr(), e);
      }
    }
  }

  /**
   * --cgroup alone is decided at each tick: a busy program outside the cgroup is not profiled
   * until it is moved in (no exec), and one inside from the start is.
   */
  @Test
  void aProcessMovedIntoTheCgroupIsProfiledFromThen() throws Exception {
    Path mount = dev.polystack.host.pipeline.CgroupV2.mount();
    Path dir = Files.createDirectories(mount.resolve("polystack-agent-test-"
        + ProcessHandle.current().pid()));
    Process outside = new ProcessBuilder(Workloads.binary("hot_cold").toString())
        .redirectErrorStream(true).start();
    Process inside = new ProcessBuilder(Workloads.binary("hot_cold").toString())
        .redirectErrorStream(true).start();
    Files.writeString(dir.resolve("cgroup.procs"), Long.toString(inside.pid()));
    try (Collector collector = Collector.start();
        Distribution.Running agent = startAgent(collector.grpcEndpoint(), "1s", "--cgroup",
            mount.relativize(dir).toString())) {
      awaitStarted(agent);
      long from = outside.info().totalCpuDuration().orElseThrow().toMillis();
      Awaits.until("a second of CPU outside the cgroup", 30_000, () ->
          outside.info().totalCpuDuration().orElseThrow().toMillis() - from > 1000);
      // An interval cut after that second: the process inside is there, the other is not.
      int before = collector.profiles().size();
      Awaits.until("an interval with the process inside", 30_000, () ->
          collector.profiles().size() > before
              && framesByPid(collector.profiles()).containsKey(inside.pid()));
      assertFalse(framesByPid(collector.profiles()).containsKey(outside.pid()),
          "profiled outside its cgroup");
      Files.writeString(dir.resolve("cgroup.procs"), Long.toString(outside.pid()));
      Awaits.until("the moved process at the Collector", 30_000, () ->
          framesByPid(collector.profiles()).getOrDefault(outside.pid(), Set.of())
              .contains("hot"));
      agent.signal("TERM");
      assertEquals(0, agent.await(60).exitCode());
    } finally {
      outside.destroyForcibly().waitFor();
      inside.destroyForcibly().waitFor();
      for (int i = 0; i < 100 && Files.exists(dir); i++) {
        try {
          Files.delete(dir);
        } catch (IOException e) {
          Thread.sleep(20); // released by the kernel just after the reap
        }
      }
    }
  }

  @Test
  void aProgramThatExecsIntoLuajitIsDescribedAnew() throws Exception {
    Path lua = Files.writeString(tmp.resolve("hot.lua"), LUA.replace("while true do",
        "local t0 = os.clock() while os.clock() - t0 < 4 do"));
    try (Collector collector = Collector.start();
        Distribution.Running agent = startAgent(collector.grpcEndpoint(), "1s")) {
      awaitStarted(agent);
      // spawner forks a child that execs luajit once told to (stdin).
      Process spawner = new ProcessBuilder(Workloads.binary("spawner").toString(), "4",
          "/usr/bin/luajit", lua.toString()).redirectErrorStream(true).start();
      spawner.getOutputStream().write('\n');
      spawner.getOutputStream().flush();
      String line = new java.io.BufferedReader(new java.io.InputStreamReader(
          spawner.getInputStream(), StandardCharsets.UTF_8)).readLine();
      long child = Long.parseLong(line.replaceAll(".*child (\\d+).*", "$1"));
      Awaits.until("the child's Lua frames under luajit", 60_000, () -> {
        for (ExportProfilesServiceRequest r : collector.profiles()) {
          for (ResourceProfiles rp : r.getResourceProfilesList()) {
            List<KeyValue> a = rp.getResource().getAttributesList();
            var d = r.getDictionary();
            if (pid(d, a) == child
                && "luajit".equals(Collector.attribute(d, a, "process.executable.name"))
                && functions(d, rp).contains("hot")) {
              return true;
            }
          }
        }
        return false;
      });
      spawner.waitFor();
      agent.signal("TERM");
      assertEquals(0, agent.await(60).exitCode());
    }
  }

  @Test
  void shortLivedProcessesAreSeenFromTheKernelsEvents() throws Exception {
    int children = 30;
    Path burst = Workloads.binary("cpu_burst");
    try (Collector collector = Collector.start();
        Distribution.Running agent = startAgent(collector.grpcEndpoint(), "1s", "--rate", "99")) {
      awaitStarted(agent);
      // Each child burns 200 ms of its own CPU time (about 20 ticks at 99 Hz, however loaded
      // the machine) and exits; one after the other.
      Process shell = new ProcessBuilder("bash", "-c", "for i in $(seq " + children + "); do "
          + burst + " 200; done").redirectErrorStream(true).start();
      shell.waitFor();
      // The chance that a child with ~20 ticks due gets none is nil; each one missing is a
      // process the agent could not describe before it exited (it reads the memory map at its
      // first tick, read within 100 ms of it after an exec). On a quiet machine none is missed; with the load of other test suites on
      // both CPUs 23 of 30 were seen. A /proc rescan every 100 ms saw 5-6 of 20 (issue 26).
      try {
        Awaits.until("samples of most of the short-lived processes", 60_000, () ->
            pidsNamed(collector.profiles(), "cpu_burst").size() >= children * 2 / 3);
      } catch (AssertionError e) {
        throw new AssertionError(e.getMessage() + ": " + pidsNamed(collector.profiles(),
            "cpu_burst").size() + " of " + children + "; agent:\n" + agent.stderrSoFar(), e);
      }
      agent.signal("TERM");
      Distribution.Result r = agent.await(60);
      assertEquals(0, r.exitCode(), r.stderr());
      System.out.println("AgentTest short-lived: " + pidsNamed(collector.profiles(), "cpu_burst")
          .size() + " of " + children + " cpu_burst processes have samples");
    }
  }

  @Test
  void aCollectorThatIsDownThenUpGetsTheDataOnceUpAndTheDropsAreCounted() throws Exception {
    int port = Collector.unusedPort();
    Path stats = tmp.resolve("stats.json");
    try (Distribution.Running agent = startAgent("http://127.0.0.1:" + port, "1s",
        "--stats-json", stats.toString())) {
      awaitStarted(agent);
      Process c = new ProcessBuilder(Workloads.binary("hot_cold").toString())
          .redirectErrorStream(true).start();
      try {
        Awaits.cpuTicks(c.pid(), 300, 60_000); // three seconds of intervals with no receiver
        try (Collector collector = Collector.onGrpcPort(port)) {
          Awaits.until("data at the Collector once it is up", 60_000,
              () -> framesByPid(collector.profiles()).getOrDefault(c.pid(), Set.of())
                  .contains("hot"));
          agent.signal("TERM");
          Distribution.Result r = agent.await(60);
          assertEquals(0, r.exitCode(), r.stderr());
        }
      } finally {
        c.destroy();
      }
      // Every sample taken was sent once the Collector was up, or counted as dropped.
      String json = Files.readString(stats);
      assertTrue(json.matches("(?s).*\"requests\":[1-9].*"), json);
      assertEquals(number(json, "samples"), number(json, "samples_sent")
          + number(json, "samples_dropped"), json);
    }
  }

  private static long number(String json, String key) {
    var m = java.util.regex.Pattern.compile("\"" + key + "\":(\\d+)").matcher(json);
    if (!m.find()) {
      throw new AssertionError("no " + key + " in " + json);
    }
    return Long.parseLong(m.group(1));
  }

  private static Distribution.Running startAgent(String endpoint, String interval,
      String... more) throws IOException {
    List<String> args = new ArrayList<>(List.of("agent", "--otlp-endpoint", endpoint,
        "--otlp-protocol", "grpc", "--export-interval", interval));
    args.addAll(List.of(more));
    return Distribution.start(args.toArray(String[]::new));
  }

  private static void awaitStarted(Distribution.Running agent) throws Exception {
    Awaits.until("the agent's start line", 120_000, () -> {
      if (!agent.process().isAlive()) {
        throw new AssertionError("the agent exited: " + agent.stderrSoFar());
      }
      return agent.stderrSoFar().contains("agent: profiling");
    });
  }

  private static long pid(ProfilesDictionary d, List<KeyValue> resource) {
    String pid = Collector.attribute(d, resource, "process.pid");
    return pid == null ? -1 : Long.parseLong(pid);
  }

  /** Function names in each process's samples, by pid. */
  static Map<Long, Set<String>> framesByPid(List<ExportProfilesServiceRequest> requests) {
    Map<Long, Set<String>> out = new HashMap<>();
    for (ExportProfilesServiceRequest r : requests) {
      for (ResourceProfiles rp : r.getResourceProfilesList()) {
        out.computeIfAbsent(pid(r.getDictionary(), rp.getResource().getAttributesList()),
            k -> new HashSet<>())
            .addAll(functions(r.getDictionary(), rp));
      }
    }
    return out;
  }

  private static Set<Long> pidsNamed(List<ExportProfilesServiceRequest> requests, String name) {
    Set<Long> out = new HashSet<>();
    for (ExportProfilesServiceRequest r : requests) {
      for (ResourceProfiles rp : r.getResourceProfilesList()) {
        List<KeyValue> a = rp.getResource().getAttributesList();
        if (name.equals(Collector.attribute(r.getDictionary(), a, "process.executable.name"))) {
          out.add(pid(r.getDictionary(), a));
        }
      }
    }
    return out;
  }

  /** The function names of every location in the samples of one resource. */
  private static Set<String> functions(ProfilesDictionary d, ResourceProfiles rp) {
    Set<String> names = new HashSet<>();
    rp.getScopeProfilesList().forEach(sp -> sp.getProfilesList().forEach(p ->
        p.getSamplesList().forEach(s -> {
          var stack = d.getStackTable(s.getStackIndex());
          for (int loc : stack.getLocationIndicesList()) {
            for (var line : d.getLocationTable(loc).getLinesList()) {
              names.add(d.getStringTable(d.getFunctionTable(line.getFunctionIndex())
                  .getNameStrindex()));
            }
          }
        })));
    return names;
  }

  private static long healthCounter(List<ExportMetricsServiceRequest> requests, String name) {
    long value = -1;
    for (ExportMetricsServiceRequest r : requests) {
      for (var rm : r.getResourceMetricsList()) {
        if (!"polystack".equals(Collector.attribute(rm.getResource().getAttributesList(),
            "service.name"))) {
          continue;
        }
        for (var sm : rm.getScopeMetricsList()) {
          for (var m : sm.getMetricsList()) {
            if (m.getName().equals(name) && m.hasSum()) {
              for (var p : m.getSum().getDataPointsList()) {
                value = Math.max(value, p.getAsInt());
              }
            }
          }
        }
      }
    }
    return value;
  }

  /** Kernel threads have no executable: /proc/PID/exe cannot be read. */
  private static boolean isKernelThread(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      long flags = Long.parseLong(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[6]);
      return (flags & 0x00200000L) != 0;
    } catch (IOException | RuntimeException e) {
      return false; // gone: it was a user process that exited (kernel threads stay)
    }
  }
}
