package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code record --event alloc --pid}: alloc_shares.c allocates exactly 3/4 of its bytes and calls
 * under path_big and 1/4 under path_small. At the default rate the byte shares by function are
 * within 3 points; with --alloc-every-call the counts, bytes and blocks in use are exact; a
 * SIGKILL of polystack leaves no uprobe_multi link of its program and the target finishes
 * normally.
 */
class AllocationProfileTest {
  /** Bytes of one 8-round cycle of alloc_shares.c's sizes. */
  static final long CYCLE_BYTES = 16 + 48 + 200 + 1000 + 4096 + 24 + 64000 + 512;
  private static final Pattern SAMPLE = Pattern.compile(
      "^\\s*(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+): ([\\d ]+)$");
  private static final Pattern LOCATION =
      Pattern.compile("^\\s*(\\d+): 0x\\p{XDigit}+ M=\\d+ (\\S+)");

  /** Allocator libraries from Debian's packages (run-tests installs them). */
  private static final Map<String, String> PRELOADED = Map.of(
      "jemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
      "tcmalloc", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
      "mimalloc", "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2");

  @TempDir Path dir;

  /** The target, started and waiting for its line on stdin. */
  private record Target(Process process, OutputStream stdin, BufferedReader stdout) {
    static Target start(long rounds, long keep) throws Exception {
      return start(rounds, keep, "libc");
    }

    /**
     * @param allocator libc; static (linked with libc.a, its malloc in the executable); or an
     *     allocator library preloaded (jemalloc, tcmalloc, mimalloc)
     */
    static Target start(long rounds, long keep, String allocator) throws Exception {
      ProcessBuilder pb = new ProcessBuilder((allocator.equals("static")
          ? Workloads.staticBinary("alloc_shares") : Workloads.binary("alloc_shares")).toString(),
          Long.toString(rounds), Long.toString(keep))
          .redirectError(ProcessBuilder.Redirect.INHERIT);
      String preload = PRELOADED.get(allocator);
      if (preload != null) {
        assertTrue(java.nio.file.Files.exists(Path.of(preload)), preload + " is not installed");
        pb.environment().put("LD_PRELOAD", preload);
      }
      Process p = pb.start();
      BufferedReader out = new BufferedReader(
          new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("ready", out.readLine());
      return new Target(p, p.getOutputStream(), out);
    }

    void go() throws Exception {
      stdin.write("go\n".getBytes(StandardCharsets.US_ASCII));
      stdin.close();
    }

    /** Waits for the target's own end: "done" and exit 0. */
    void finishes() throws Exception {
      assertEquals("done", stdout.readLine());
      assertTrue(process.waitFor(300, TimeUnit.SECONDS), "the target did not finish");
      assertEquals(0, process.exitValue());
    }
  }

  @Test
  void byteSharesByFunctionAreWithinThreePointsAtTheDefaultRate() throws Exception {
    Map<String, long[]> byFunction = record(200_000, 0, List.of());
    long big = byFunction.get("path_big")[1];
    long small = byFunction.get("path_small")[1];
    double share = big / (double) (big + small);
    String figures = String.format("path_big %d bytes, path_small %d bytes, share %.4f (truth"
        + " 0.75)", big, small, share);
    System.out.println("alloc shares at 512 KiB: " + figures);
    assertTrue(Math.abs(share - 0.75) <= 0.03, figures);
    // The unbiased total is the program's: 200000 rounds allocate 25000 cycles x 4 calls.
    double total = 25_000.0 * 4 * CYCLE_BYTES;
    assertTrue(Math.abs((big + small) / total - 1) <= 0.05, "total " + (big + small)
        + " of " + total);
  }

  @Test
  void everyCallGivesExactCountsAndBytes() throws Exception {
    // The last 8 rounds (one cycle of the sizes) keep their path_small block.
    Map<String, long[]> byFunction = record(1000, 8, List.of("--alloc-every-call"));
    // 1000 rounds = 125 cycles of the 8 sizes; path_big allocates 3 blocks a round.
    assertEquals(3000, byFunction.get("path_big")[0]);
    assertEquals(1000, byFunction.get("path_small")[0]);
    assertEquals(3 * 125 * CYCLE_BYTES, byFunction.get("path_big")[1]);
    assertEquals(125 * CYCLE_BYTES, byFunction.get("path_small")[1]);
    // Every path_big block was freed; 8 path_small blocks, one of each size, are in use.
    assertEquals(0, byFunction.get("path_big")[2]);
    assertEquals(0, byFunction.get("path_big")[3]);
    assertEquals(8, byFunction.get("path_small")[2]);
    assertEquals(CYCLE_BYTES, byFunction.get("path_small")[3]);
  }

  /**
   * The allocator a program's malloc is bound to is the one probed, and only it: jemalloc,
   * tcmalloc and mimalloc preloaded, and a statically linked program's own malloc. Every call
   * counted once, frees matched: the exact figures of the C library's case.
   */
  @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.ValueSource(strings = {"jemalloc", "tcmalloc", "mimalloc",
      "static"})
  void theAllocatorMallocIsBoundToIsProbed(String allocator) throws Exception {
    Map<String, long[]> byFunction = record(1000, 8, List.of("--alloc-every-call"), allocator);
    assertEquals(3000, byFunction.get("path_big")[0], allocator);
    assertEquals(1000, byFunction.get("path_small")[0], allocator);
    assertEquals(3 * 125 * CYCLE_BYTES, byFunction.get("path_big")[1], allocator);
    assertEquals(0, byFunction.get("path_big")[2], allocator + ": every block freed");
    assertEquals(8, byFunction.get("path_small")[2], allocator + ": blocks in use");
    assertEquals(CYCLE_BYTES, byFunction.get("path_small")[3], allocator);
  }

  /**
   * {@code record --event alloc -- PROGRAM}: the program is held until its allocator is probed,
   * so its very first allocation (stdout's buffer, for its first line) is in the profile beside
   * the exact counts; its exit code is polystack's.
   */
  @Test
  void aLaunchedProgramIsProbedBeforeItsFirstAllocation() throws Exception {
    Path out = dir.resolve("launched.pb.gz");
    Distribution.Result result = Distribution.run("record", "--event", "alloc",
        "--alloc-every-call", "-o", out.toString(), "--",
        Workloads.binary("alloc_shares").toString(), "1000", "8", "nowait");
    assertEquals(0, result.exitCode(), result.stderr());
    var raw = Tools.run(300, null, List.of(Tools.go(), "tool", "pprof", "-raw", out.toString()));
    assertEquals(0, raw.exitCode(), raw.stderr());
    Map<String, long[]> byFunction = byFunction(raw.stdout());
    assertEquals(3000, byFunction.get("path_big")[0]);
    assertEquals(1000, byFunction.get("path_small")[0]);
    assertEquals(CYCLE_BYTES, byFunction.get("path_small")[3]);
    assertTrue(byFunction.containsKey("_IO_file_doallocate"),
        "stdout's buffer, the program's first allocation: " + byFunction.keySet());

    Distribution.Result failing = Distribution.run("record", "--event", "alloc", "-o",
        dir.resolve("failing.pb.gz").toString(), "--", "sh", "-c", "exit 3");
    assertEquals(3, failing.exitCode(), failing.stderr());
  }

  /**
   * The same exact run streamed to a real Collector: one request at the end with one profile per
   * sample type, whose values by function are the program's, as the pprof file has them.
   */
  @Test
  void aCollectorGetsOneProfilePerSampleTypeWithTheExactValues() throws Exception {
    try (Collector collector = Collector.start()) {
      Map<String, long[]> pprof = record(1000, 8, List.of("--alloc-every-call",
          "--otlp-endpoint", collector.grpcEndpoint(), "--otlp-protocol", "grpc"));
      var received = collector.await(collector::profiles, l -> !l.isEmpty());
      assertEquals(1, received.size(), "the totals are sent once, at the end: "
          + collector.log());
      var request = received.get(0);
      var d = request.getDictionary();
      var profiles = request.getResourceProfiles(0).getScopeProfiles(0).getProfilesList();
      List<String> types = new ArrayList<>();
      Map<String, long[]> otlp = new HashMap<>();
      for (int i = 0; i < profiles.size(); i++) {
        var profile = profiles.get(i);
        types.add(d.getStringTable(profile.getSampleType().getTypeStrindex()) + "/"
            + d.getStringTable(profile.getSampleType().getUnitStrindex()));
        for (var sample : profile.getSamplesList()) {
          java.util.Set<String> functions = new java.util.HashSet<>();
          for (int location : d.getStackTable(sample.getStackIndex())
              .getLocationIndicesList()) {
            for (var line : d.getLocationTable(location).getLinesList()) {
              functions.add(d.getStringTable(
                  d.getFunctionTable(line.getFunctionIndex()).getNameStrindex()));
            }
          }
          for (String f : functions) {
            otlp.computeIfAbsent(f, k -> new long[4])[i] += sample.getValues(0);
          }
        }
      }
      assertEquals(List.of("alloc_objects/count", "alloc_space/bytes", "inuse_objects/count",
          "inuse_space/bytes"), types);
      for (String f : List.of("path_big", "path_small")) {
        assertEquals(java.util.Arrays.toString(pprof.get(f)),
            java.util.Arrays.toString(otlp.get(f)), f + ": pprof and OTLP disagree");
      }
      assertEquals(3 * 125 * CYCLE_BYTES, otlp.get("path_big")[1]);
      assertEquals(CYCLE_BYTES, otlp.get("path_small")[3]);
    }
  }

  @Test
  void sigkillLeavesNoProbeAndTheTargetFinishes() throws Exception {
    Target target = Target.start(400_000, 0);
    try (Distribution.Running polystack = Distribution.start("record", "--event", "alloc",
        "--pid", Long.toString(target.process().pid()), "-o", dir.resolve("k.pb.gz").toString())) {
      long pid = polystack.process().pid();
      Awaits.until("polystack's uprobe_multi link", 60_000, () -> !ownLinks(pid).isEmpty());
      List<String> links = ownLinks(pid);
      target.go();
      polystack.signal("KILL");
      assertTrue(polystack.process().waitFor(30, TimeUnit.SECONDS));
      // The link goes with its last descriptor; the kernel releases it as the process dies.
      Awaits.until("no uprobe_multi link " + links + " of alloc_probe", 10_000,
          () -> allocLinks().stream().noneMatch(links::contains));
    }
    target.finishes();
  }

  /** Records the target until it exits; per function: the four values of its samples. */
  private Map<String, long[]> record(long rounds, long keep, List<String> options)
      throws Exception {
    return record(rounds, keep, options, "libc");
  }

  private Map<String, long[]> record(long rounds, long keep, List<String> options,
      String allocator) throws Exception {
    Target target = Target.start(rounds, keep, allocator);
    Path out = dir.resolve("alloc.pb.gz");
    List<String> args = new ArrayList<>(List.of("record", "--event", "alloc", "--pid",
        Long.toString(target.process().pid()), "-o", out.toString()));
    args.addAll(options);
    Distribution.Result result;
    try (Distribution.Running polystack = Distribution.start(args.toArray(String[]::new))) {
      long pid = polystack.process().pid();
      Awaits.until("polystack's uprobe_multi link", 60_000, () -> !ownLinks(pid).isEmpty());
      target.go();
      target.finishes();
      result = polystack.await(120);
    }
    assertEquals(0, result.exitCode(), result.stderr());
    var raw = Tools.run(300, null, List.of(Tools.go(), "tool", "pprof", "-raw", out.toString()));
    assertEquals(0, raw.exitCode(), raw.stderr());
    assertTrue(raw.stdout().contains(
        "alloc_objects/count alloc_space/bytes[dflt] inuse_objects/count inuse_space/bytes"),
        raw.stdout());
    return byFunction(raw.stdout());
  }

  /** Sums each sample's values under every function its stack names once. */
  static Map<String, long[]> byFunction(String raw) {
    Map<String, String> names = new HashMap<>();
    for (String line : raw.split("\n")) {
      Matcher m = LOCATION.matcher(line);
      if (m.find()) {
        names.put(m.group(1), m.group(2));
      }
    }
    Map<String, long[]> out = new HashMap<>();
    for (String line : raw.split("\n")) {
      Matcher m = SAMPLE.matcher(line);
      if (!m.matches()) {
        continue;
      }
      java.util.Set<String> functions = new java.util.HashSet<>();
      for (String id : m.group(5).trim().split(" +")) {
        functions.add(names.getOrDefault(id, "?"));
      }
      for (String f : functions) {
        long[] v = out.computeIfAbsent(f, k -> new long[4]);
        for (int i = 0; i < 4; i++) {
          v[i] += Long.parseLong(m.group(i + 1));
        }
      }
    }
    out.putIfAbsent("path_big", new long[4]);
    out.putIfAbsent("path_small", new long[4]);
    return out;
  }

  /**
   * Ids of the uprobe_multi links among process {@code pid}'s descriptors (fdinfo names their
   * type): polystack's own, whatever other processes probe on the machine meanwhile.
   */
  static List<String> ownLinks(long pid) throws java.io.IOException {
    List<String> out = new ArrayList<>();
    Pattern id = Pattern.compile("(?m)^link_id:\\s*(\\d+)$");
    try (var fds = java.nio.file.Files.list(Path.of("/proc/" + pid + "/fdinfo"))) {
      for (Path fd : fds.toList()) {
        try {
          String info = java.nio.file.Files.readString(fd);
          Matcher m = id.matcher(info);
          if ((info.contains("link_type:\tuprobe_multi") || info.contains("link_type:\t12"))
              && m.find()) {
            out.add(m.group(1));
          }
        } catch (java.io.IOException e) {
          // closed meanwhile
        }
      }
    }
    return out;
  }

  /** Ids of uprobe_multi links whose program is alloc_probe (bpftool 7.1 says "type 12"). */


  static List<String> allocLinks() throws Exception {
    var links = Tools.run(30, null, List.of("bpftool", "link", "list"));
    List<String> out = new ArrayList<>();
    Matcher m = Pattern.compile("(?m)^(\\d+): (?:uprobe_multi|type 12)\\s+prog (\\d+)").matcher(
        links.stdout());
    while (m.find()) {
      var prog = Tools.run(30, null, List.of("bpftool", "prog", "show", "id", m.group(2)));
      if (prog.stdout().contains("alloc_probe")) {
        out.add(m.group(1));
      }
    }
    return out;
  }
}
