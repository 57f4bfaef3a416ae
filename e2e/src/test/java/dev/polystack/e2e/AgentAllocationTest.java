package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.profiles.v1development.Profile;
import io.opentelemetry.proto.profiles.v1development.ProfilesDictionary;
import io.opentelemetry.proto.profiles.v1development.ResourceProfiles;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code agent --event alloc}: the allocations of a selected process go through the agent's
 * pipeline to a real Collector as one profile per sample type and interval. alloc_shares.c
 * (every call sampled) allocates 3,000 blocks under path_big and 1,000 under path_small and keeps
 * 8 of path_small's: summed over the intervals the allocated counts are exact, and the last
 * interval has the 8 blocks in use. Without a selection the agent refuses, in one line.
 */
class AgentAllocationTest {

  @Test
  void aSelectedProcesssAllocationsReachTheCollectorPerSampleType() throws Exception {
    Process target = new ProcessBuilder(Workloads.binary("alloc_shares").toString(), "1000",
        "8").redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(
        new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8));
    assertEquals("ready", out.readLine());
    try (Collector collector = Collector.start();
        Distribution.Running agent = Distribution.start("agent", "--event", "alloc",
            "--alloc-rate", "1", "--pid", Long.toString(target.pid()), "--otlp-endpoint",
            collector.grpcEndpoint(), "--otlp-protocol", "grpc", "--export-interval", "1s")) {
      Awaits.until("the agent's start line", 120_000, () -> {
        if (!agent.process().isAlive()) {
          throw new AssertionError("the agent exited: " + agent.stderrSoFar());
        }
        return agent.stderrSoFar().contains("agent: profiling the allocations of");
      });
      target.getOutputStream().write("go\n".getBytes(StandardCharsets.US_ASCII));
      target.getOutputStream().close();
      assertEquals("done", out.readLine());
      assertTrue(target.waitFor(60, TimeUnit.SECONDS));
      Awaits.until("path_big's 3000 allocations at the Collector", 60_000,
          () -> totals(collector.profiles(), target.pid()).getOrDefault(
              "alloc_objects/path_big", 0L) >= 3000);
      Map<String, Long> t = totals(collector.profiles(), target.pid());
      assertEquals(3000L, t.get("alloc_objects/path_big"), t::toString);
      assertEquals(1000L, t.get("alloc_objects/path_small"), t::toString);
      assertEquals(3 * 125 * AllocationProfileTest.CYCLE_BYTES, t.get("alloc_space/path_big"),
          t::toString);
      Map<String, Long> last = lastInuse(collector.profiles(), target.pid());
      assertEquals(8L, last.get("inuse_objects/path_small"), last::toString);
      assertEquals(AllocationProfileTest.CYCLE_BYTES, last.get("inuse_space/path_small"),
          last::toString);
    } finally {
      target.destroyForcibly();
    }
  }

  @Test
  void withoutASelectionItRefusesInOneLine() throws Exception {
    var r = Distribution.run("agent", "--event", "alloc", "--otlp-endpoint",
        "http://127.0.0.1:9", "--duration", "1s");
    assertEquals(2, r.exitCode(), r.stderr());
    assertEquals(1, r.stderrLines().size(), r.stderr());
    assertTrue(r.stderr().contains("select them with --pid, --comm or --match"), r.stderr());
  }

  /** Per "TYPE/path_big|path_small", the values summed over every profile of the process. */
  private static Map<String, Long> totals(List<ExportProfilesServiceRequest> requests,
      long pid) {
    Map<String, Long> out = new TreeMap<>();
    for (ExportProfilesServiceRequest r : requests) {
      for (ResourceProfiles rp : r.getResourceProfilesList()) {
        if (pidOf(r.getDictionary(), rp) != pid) {
          continue;
        }
        rp.getScopeProfilesList().forEach(sp -> sp.getProfilesList().forEach(
            p -> add(out, r.getDictionary(), p)));
      }
    }
    return out;
  }

  /** The in-use values of the process's last profiles (each interval has them as of its end). */
  private static Map<String, Long> lastInuse(List<ExportProfilesServiceRequest> requests,
      long pid) {
    Map<String, Long> out = new TreeMap<>();
    List<Profile> inuse = new ArrayList<>();
    ProfilesDictionary dictionary = null;
    for (ExportProfilesServiceRequest r : requests) {
      for (ResourceProfiles rp : r.getResourceProfilesList()) {
        if (pidOf(r.getDictionary(), rp) != pid) {
          continue;
        }
        for (var sp : rp.getScopeProfilesList()) {
          List<Profile> found = new ArrayList<>();
          for (Profile p : sp.getProfilesList()) {
            if (type(r.getDictionary(), p).startsWith("inuse_")) {
              found.add(p);
            }
          }
          if (!found.isEmpty()) {
            inuse = found;
            dictionary = r.getDictionary();
          }
        }
      }
    }
    for (Profile p : inuse) {
      add(out, dictionary, p);
    }
    return out;
  }

  private static void add(Map<String, Long> out, ProfilesDictionary d, Profile p) {
    String type = type(d, p);
    for (var s : p.getSamplesList()) {
      Set<String> names = new HashSet<>();
      var stack = d.getStackTable(s.getStackIndex());
      for (int loc : stack.getLocationIndicesList()) {
        for (var line : d.getLocationTable(loc).getLinesList()) {
          names.add(d.getStringTable(d.getFunctionTable(line.getFunctionIndex())
              .getNameStrindex()));
        }
      }
      for (String path : List.of("path_big", "path_small")) {
        if (names.contains(path)) {
          out.merge(type + "/" + path, s.getValues(0), Long::sum);
        }
      }
    }
  }

  private static long pidOf(ProfilesDictionary d, ResourceProfiles rp) {
    String pid = Collector.attribute(d, rp.getResource().getAttributesList(), "process.pid");
    return pid == null ? -1 : Long.parseLong(pid);
  }

  private static String type(ProfilesDictionary d, Profile p) {
    return d.getStringTable(p.getSampleType().getTypeStrindex());
  }
}
