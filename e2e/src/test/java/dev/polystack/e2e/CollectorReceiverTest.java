package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.profiles.v1development.KeyValueAndUnit;
import io.opentelemetry.proto.profiles.v1development.Location;
import io.opentelemetry.proto.profiles.v1development.Profile;
import io.opentelemetry.proto.profiles.v1development.ProfilesDictionary;
import io.opentelemetry.proto.profiles.v1development.ResourceProfiles;
import io.opentelemetry.proto.profiles.v1development.Sample;
import io.opentelemetry.proto.profiles.v1development.ScopeProfiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The polystack receiver (otel-bridge/receiver) in the test Collector distribution: the
 * Collector runs {@code polystack agent} as its child and writes what the agent sends, through
 * its profiles and metrics pipelines, to files the test reads back. Whole host, as deployed.
 */
class CollectorReceiverTest {
  private static final String CONFIG = """
      receivers:
        polystack:
          executable: %s
          export_interval: 1s
          include_command_line: true
      exporters:
        file/profiles:
          path: %s/profiles.pb
          format: proto
          flush_interval: 100ms
        file/metrics:
          path: %s/metrics.pb
          format: proto
          flush_interval: 100ms
      service:
        telemetry:
          metrics:
            level: none
        pipelines:
          profiles:
            receivers: [polystack]
            exporters: [file/profiles]
          metrics:
            receivers: [polystack]
            exporters: [file/metrics]
      """;
  /** CPU-bound Lua with global function names, until the test ends it. */
  private static final String LUA = """
      function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
      while true do fib(20) end
      """;
  /** How long a step may take on a loaded machine: the agent's JVM starts in seconds. */
  private static final long STEP_MILLIS = TimeUnit.SECONDS.toMillis(120);

  @TempDir Path tmp;

  @Test
  void agentInsideTheCollectorProfilesNewProcessesSurvivesAKillAndStopsWithTheCollector()
      throws Exception {
    Collector collector = Collector.startWithConfig(tmp, CONFIG.formatted(launcher(), tmp, tmp));
    Target c = null;
    Target lua = null;
    try {
      long agent = awaitAgent(collector, -1);
      String endpoint = endpointOf(agent);

      Path script = tmp.resolve("fib.lua");
      Files.writeString(script, LUA);
      c = Target.start(Workloads.binary("hot_cold"));
      lua = Target.start(Path.of("luajit"), script.toString());
      long cPid = c.pid();
      long luaPid = lua.pid();

      // Two resources, each with its own frames: native for the C program, Lua for LuaJIT.
      Awaits.until("frames of both programs at the Collector", STEP_MILLIS, () -> {
        List<ExportProfilesServiceRequest> all = collector.profiles();
        return functions(all, cPid, "native").contains("hot")
            && functions(all, luaPid, "luajit").contains("fib");
      });
      List<ExportProfilesServiceRequest> all = collector.profiles();
      assertEquals(Set.of("hot_cold"), attributes(all, cPid, "process.executable.name"));
      assertEquals(Set.of("luajit"), attributes(all, luaPid, "process.executable.name"));
      assertTrue(attributes(all, luaPid, "process.command_line").stream()
          .anyMatch(l -> l.contains(script.toString())), "include_command_line: true");
      Awaits.until("the agent's health metrics", STEP_MILLIS, () -> !collector.metrics().stream()
          .filter(m -> m.getResourceMetricsList().stream()
              .flatMap(rm -> rm.getScopeMetricsList().stream())
              .flatMap(sm -> sm.getMetricsList().stream())
              .anyMatch(metric -> metric.getName().startsWith("polystack.")))
          .toList().isEmpty());

      // kill -9: the receiver starts a new agent, and data keeps arriving from it.
      ProcessHandle.of(agent).orElseThrow().destroyForcibly();
      long restarted = awaitAgent(collector, agent);
      assertNotEquals(agent, restarted);
      assertFalse(alive(agent), "the killed agent is gone");
      assertTrue(collector.log().contains("signal: killed"),
          "the restart is logged with the exit status: " + collector.log());
      String newEndpoint = endpointOf(restarted);
      assertEquals(endpoint, newEndpoint, "the receiver's endpoint outlives one agent");
      // The old agent died before the new one started: what is written from here on is new.
      int before = collector.profiles().size();
      Awaits.until("frames from the restarted agent", STEP_MILLIS, () -> {
        List<ExportProfilesServiceRequest> now = collector.profiles();
        List<ExportProfilesServiceRequest> since = now.subList(Math.min(before, now.size()),
            now.size());
        return functions(since, luaPid, "luajit").contains("fib")
            && functions(since, cPid, "native").contains("hot");
      });

      // SIGTERM to the Collector: the agent flushes, exits 0, and nothing is left running.
      assertEquals(0, collector.stop(), collector.log());
      assertFalse(alive(restarted), "agent " + restarted + " outlived the Collector");
      List<Long> left = processesWith("agent", "--otlp-endpoint", endpoint);
      assertTrue(left.isEmpty(), "agent processes left: " + left);
      String log = collector.log();
      assertTrue(log.contains("polystack agent stopped"), log);
      assertFalse(log.contains("did not stop after SIGTERM"), log);
    } finally {
      collector.close();
      if (c != null) {
        c.close();
      }
      if (lua != null) {
        lua.close();
      }
    }
  }

  @Test
  void badReceiverConfigFailsCollectorStartNamingTheField() throws Exception {
    String config = CONFIG.formatted(launcher(), tmp, tmp)
        .replace("export_interval: 1s", "export_interval: 1s\n    rate: 0");
    Collector.Exit exit = Collector.run(tmp, config);
    assertNotEquals(0, exit.code(), exit.output());
    assertTrue(exit.output().contains("receivers::polystack: rate: 0 Hz is out of range"),
        exit.output());
    assertFalse(exit.output().contains("polystack agent started"), exit.output());
  }

  @Test
  void argumentsTheAgentRejectsFailCollectorStart() throws Exception {
    String config = CONFIG.formatted(launcher(), tmp, tmp)
        .replace("include_command_line: true", "extra_args: [--no-such-option]");
    Collector.Exit exit = Collector.run(tmp, config);
    assertNotEquals(0, exit.code(), exit.output());
    assertTrue(exit.output().contains(
        "polystack agent exited before it started profiling (exit status 2)"), exit.output());
    assertFalse(exit.output().contains("Everything is ready"), exit.output());
    assertTrue(exit.output().contains("--no-such-option"), "the agent's own message is logged: "
        + exit.output());
  }

  /**
   * An executable that runs the agent as the ./polystack launcher would, in its own process
   * (exec): the launcher itself would build the distribution from inside the build under test.
   */
  private Path launcher() throws IOException {
    Path launcher = tmp.resolve("polystack");
    StringBuilder script = new StringBuilder("#!/bin/sh\nexec env --default-signal=INT,TERM,HUP");
    List<String> command = Distribution.command("agent");
    for (String word : command.subList(0, command.size() - 1)) { // the receiver passes "agent"
      script.append(" '").append(word.replace("'", "'\\''")).append('\'');
    }
    Files.writeString(launcher, script.append(" \"$@\"\n").toString());
    Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwxr-xr-x"));
    return launcher;
  }

  /** The Collector's agent child once there is one other than {@code not}. */
  private static long awaitAgent(Collector collector, long not) throws Exception {
    long[] found = {-1};
    Awaits.until("an agent process under the Collector", STEP_MILLIS, () -> {
      found[0] = ProcessHandle.of(collector.pid()).orElseThrow().children()
          .mapToLong(ProcessHandle::pid)
          .filter(pid -> pid != not && commandLine(pid).contains("agent"))
          .findFirst().orElse(-1);
      return found[0] > 0;
    });
    return found[0];
  }

  private static String endpointOf(long agent) {
    List<String> args = commandLine(agent);
    int i = args.indexOf("--otlp-endpoint");
    assertTrue(i >= 0 && i + 1 < args.size(), args.toString());
    String endpoint = args.get(i + 1);
    assertTrue(endpoint.startsWith("http://127.0.0.1:"), endpoint);
    assertEquals("grpc", args.get(args.indexOf("--otlp-protocol") + 1), args.toString());
    return endpoint;
  }

  /** /proc/PID/cmdline as arguments; empty once the process is gone. */
  private static List<String> commandLine(long pid) {
    try {
      String raw = new String(Files.readAllBytes(Path.of("/proc/" + pid + "/cmdline")),
          StandardCharsets.UTF_8);
      return raw.isEmpty() ? List.of() : List.of(raw.split("\0"));
    } catch (NoSuchFileException e) {
      return List.of();
    } catch (IOException e) {
      return List.of();
    }
  }

  /** Every process on the host whose command line holds all of {@code words} as arguments. */
  private static List<Long> processesWith(String... words) throws IOException {
    List<Long> out = new ArrayList<>();
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : procs.toList()) {
        String name = p.getFileName().toString();
        if (name.chars().allMatch(Character::isDigit)
            && commandLine(Long.parseLong(name)).containsAll(List.of(words))) {
          out.add(Long.parseLong(name));
        }
      }
    }
    return out;
  }

  /** Present and not a zombie. */
  private static boolean alive(long pid) throws IOException {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      return !stat.substring(stat.lastIndexOf(')') + 1).strip().startsWith("Z");
    } catch (NoSuchFileException e) {
      return false;
    }
  }

  /** The resources of process {@code pid} in every request. */
  private static List<Resource> resources(List<ExportProfilesServiceRequest> requests,
      long pid) {
    List<Resource> out = new ArrayList<>();
    for (ExportProfilesServiceRequest r : requests) {
      for (ResourceProfiles rp : r.getResourceProfilesList()) {
        if (String.valueOf(pid).equals(Collector.attribute(r.getDictionary(),
            rp.getResource().getAttributesList(), "process.pid"))) {
          out.add(new Resource(r.getDictionary(), rp));
        }
      }
    }
    return out;
  }

  private record Resource(ProfilesDictionary dictionary, ResourceProfiles profiles) {}

  private static Set<String> attributes(List<ExportProfilesServiceRequest> requests, long pid,
      String key) {
    Set<String> out = new HashSet<>();
    for (Resource r : resources(requests, pid)) {
      String value = Collector.attribute(r.dictionary(),
          r.profiles().getResource().getAttributesList(), key);
      if (value != null) {
        out.add(value);
      }
    }
    return out;
  }

  /** Names of the functions of {@code type} frames in the samples of process {@code pid}. */
  private static Set<String> functions(List<ExportProfilesServiceRequest> requests, long pid,
      String type) {
    Set<String> out = new HashSet<>();
    for (Resource r : resources(requests, pid)) {
      ProfilesDictionary d = r.dictionary();
      for (ScopeProfiles sp : r.profiles().getScopeProfilesList()) {
        for (Profile p : sp.getProfilesList()) {
          for (Sample s : p.getSamplesList()) {
            for (int li : d.getStackTable(s.getStackIndex()).getLocationIndicesList()) {
              Location l = d.getLocationTable(li);
              if (type.equals(frameType(d, l)) && l.getLinesCount() > 0) {
                out.add(d.getStringTable(d.getFunctionTable(l.getLines(0).getFunctionIndex())
                    .getNameStrindex()));
              }
            }
          }
        }
      }
    }
    return out;
  }

  private static String frameType(ProfilesDictionary d, Location l) {
    for (int i : l.getAttributeIndicesList()) {
      KeyValueAndUnit kv = d.getAttributeTable(i);
      if (d.getStringTable(kv.getKeyStrindex()).equals("profile.frame.type")) {
        return kv.getValue().hasStringValueStrindex()
            ? d.getStringTable(kv.getValue().getStringValueStrindex())
            : kv.getValue().getStringValue();
      }
    }
    return "";
  }

}
