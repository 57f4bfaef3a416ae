package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SIGKILL of {@code record --event alloc} at random moments (before, during and after it
 * attaches, while the target allocates through every probed libc function): the kernel drops
 * the probes with polystack's last descriptor, so after each kill no uprobe_multi link of the
 * allocation program is left, the code of every probed function is byte for byte the library
 * file's again, and the target runs on, checks every block it allocates, and exits 0 when told.
 * While polystack is attached, the same read sees the probes' breakpoints, so the check can
 * tell a probed function from an unprobed one.
 */
class AllocationKillTest {
  /** The libc functions polystack probes (AllocatorSites). */
  private static final List<String> SITES = List.of("malloc", "calloc", "realloc", "free",
      "posix_memalign", "aligned_alloc", "memalign");
  private static final int TRIALS = Reliability.intProperty("reliability.allocKillTrials", 20);
  private static final int BYTES = 16;

  @TempDir Path dir;

  /** One trial: when polystack was killed, and what, if anything, was wrong afterwards. */
  private record Trial(KillTrials.KillMoment moment, boolean attachedAtKill,
      boolean breakpointSeen, String problem) {}

  @Test
  void sigkillAtRandomMomentsLeavesNoProbeAndTheTargetsCodeAsItWas() throws Exception {
    long seed = KillTrials.seed();
    List<KillTrials.KillMoment> moments = KillTrials.moments(seed, TRIALS, 2500, 1000);
    long started = System.nanoTime();
    // One at a time: after each kill the host's link list, which names no process, must empty.
    List<Trial> results = KillTrials.run(TRIALS, 1, n -> trial(moments.get(n)));
    List<String> problems = results.stream().map(Trial::problem)
        .filter(java.util.Objects::nonNull).toList();
    long attached = results.stream().filter(Trial::attachedAtKill).count();
    long seen = results.stream().filter(Trial::breakpointSeen).count();
    Reliability.report("kill-alloc-KILL", String.format("trials=%d harmed=%d attached_at_kill=%d"
        + " breakpoints_seen_while_attached=%d seconds=%.0f seed=%d moments=%s%s", TRIALS,
        problems.size(), attached, seen, (System.nanoTime() - started) / 1e9, seed, moments,
        problems.isEmpty() ? "" : " problems=" + problems));
    assertEquals(List.of(), problems, "replay: -Dreliability.seed=" + seed);
    assertTrue(seen > 0 && seen == attached, "the probes' breakpoints were seen in " + seen
        + " of the " + attached + " trials killed while attached: the code check is blind");
  }

  private Trial trial(KillTrials.KillMoment moment) throws Exception {
    Process target = new ProcessBuilder(Workloads.binary("alloc_until_eof").toString())
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(
        new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8));
    try {
      assertEquals("ready", out.readLine());
      int pid = (int) target.pid();
      Map<String, Site> sites = sites(pid);
      boolean attached;
      boolean breakpoint = false;
      try (Distribution.Running polystack = Distribution.start("record", "--event", "alloc",
          "--pid", Integer.toString(pid), "-o", dir.resolve("k" + moment.trial() + ".pb.gz")
              .toString())) {
        attached = KillTrials.awaitKillMoment(moment, polystack,
            () -> !AllocationProfileTest.ownLinks(polystack.pid()).isEmpty(), 20);
        if (attached) {
          breakpoint = sites.values().stream().anyMatch(s -> s.live(pid)[0] == (byte) 0xcc);
        }
        polystack.signal("KILL");
        assertTrue(polystack.process().waitFor(30, TimeUnit.SECONDS), "polystack lived on");
      }
      String problem = KillTrials.notAttachedProblem(moment, attached);
      if (problem == null) {
        problem = afterKill(moment, pid, sites, target, out);
      }
      return new Trial(moment, attached, breakpoint, problem);
    } finally {
      target.destroyForcibly();
      target.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** What is wrong once polystack is gone: a link left, changed code, a harmed target. */
  private static String afterKill(KillTrials.KillMoment moment, int pid, Map<String, Site> sites,
      Process target, BufferedReader out) throws Exception {
    long deadline = System.nanoTime() + 10_000_000_000L;
    List<String> links = AllocationProfileTest.allocLinks();
    while (!links.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(50);
      links = AllocationProfileTest.allocLinks();
    }
    if (!links.isEmpty()) {
      return moment + ": uprobe_multi links of alloc_probe left: " + links;
    }
    for (Map.Entry<String, Site> e : sites.entrySet()) {
      byte[] live = e.getValue().live(pid);
      if (!Arrays.equals(live, e.getValue().file())) {
        return moment + ": " + e.getKey() + "'s code differs from the file: "
            + hex(live) + " against " + hex(e.getValue().file());
      }
    }
    List<Reliability.TaskState> stopped = KillTrials.stoppedAfterRelease(pid);
    if (!stopped.isEmpty()) {
      return moment + ": target threads stopped: " + stopped;
    }
    target.getOutputStream().close(); // end of file: the target finishes its round and exits
    String done = out.readLine();
    if (!target.waitFor(30, TimeUnit.SECONDS)) {
      return moment + ": the target did not exit after its stdin closed";
    }
    if (target.exitValue() != 0 || done == null || !done.startsWith("done ")) {
      return moment + ": target exited " + target.exitValue() + " after \"" + done + "\"";
    }
    return null;
  }

  /**
   * A probed function: where its first bytes are in the target, and what the library file holds
   * there.
   */
  private record Site(long address, byte[] file) {
    byte[] live(int pid) {
      byte[] b = new byte[BYTES];
      try (RandomAccessFile mem = new RandomAccessFile("/proc/" + pid + "/mem", "r")) {
        mem.seek(address);
        mem.readFully(b);
      } catch (java.io.IOException e) {
        throw new AssertionError("cannot read process " + pid + " at 0x"
            + Long.toHexString(address), e);
      }
      return b;
    }
  }

  /**
   * The probed functions of the C library process {@code pid} maps: each symbol's file offset
   * (from the PT_LOAD holding it, as a uprobe's), its address in the process, and the file's
   * bytes there. Found with binutils, independently of polystack's ELF reader.
   */
  private static Map<String, Site> sites(int pid) throws Exception {
    String libc = null;
    List<long[]> executable = new ArrayList<>(); // start, end, file offset
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/maps"))) {
      String[] f = line.trim().split("\\s+");
      if (f.length >= 6 && f[5].contains("/libc.so") && f[1].contains("x")) {
        libc = f[5];
        String[] range = f[0].split("-");
        executable.add(new long[] {Long.parseUnsignedLong(range[0], 16),
            Long.parseUnsignedLong(range[1], 16), Long.parseUnsignedLong(f[2], 16)});
      }
    }
    assertTrue(libc != null, "process " + pid + " maps no C library");
    Path file = Path.of("/proc/" + pid + "/root" + libc);
    List<long[]> loads = new ArrayList<>(); // offset, vaddr, filesz
    Matcher load = Pattern.compile("(?m)^\\s*LOAD\\s+0x(\\p{XDigit}+) 0x(\\p{XDigit}+)"
        + " 0x\\p{XDigit}+ 0x(\\p{XDigit}+)").matcher(
            Tools.run(30, null, List.of("readelf", "-lW", file.toString())).stdout());
    while (load.find()) {
      loads.add(new long[] {Long.parseLong(load.group(1), 16), Long.parseLong(load.group(2), 16),
          Long.parseLong(load.group(3), 16)});
    }
    Map<String, Long> values = new LinkedHashMap<>();
    for (String line : Tools.run(30, null, List.of("nm", "-D", "--defined-only",
        file.toString())).stdout().split("\n")) {
      String[] f = line.trim().split("\\s+");
      String name = f.length == 3 ? f[2].replaceAll("@.*", "") : "";
      if (SITES.contains(name) && "TtWi".indexOf(f[1].charAt(0)) >= 0) {
        values.putIfAbsent(name, Long.parseLong(f[0], 16));
      }
    }
    Map<String, Site> sites = new LinkedHashMap<>();
    try (RandomAccessFile elf = new RandomAccessFile(file.toFile(), "r")) {
      for (Map.Entry<String, Long> e : values.entrySet()) {
        long offset = -1;
        for (long[] l : loads) {
          if (e.getValue() >= l[1] && e.getValue() < l[1] + l[2]) {
            offset = e.getValue() - l[1] + l[0];
          }
        }
        long address = -1;
        for (long[] m : executable) {
          if (offset >= m[2] && offset < m[2] + (m[1] - m[0])) {
            address = m[0] + offset - m[2];
          }
        }
        assertTrue(offset >= 0 && address >= 0, e.getKey() + " not found in " + libc);
        byte[] bytes = new byte[BYTES];
        elf.seek(offset);
        elf.readFully(bytes);
        sites.put(e.getKey(), new Site(address, bytes));
      }
    }
    assertTrue(sites.keySet().containsAll(List.of("malloc", "free", "realloc")), "" + sites);
    return sites;
  }

  private static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02x", x & 0xff));
    }
    return sb.toString();
  }
}
