package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
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

  @Test
  void sigkillAtRandomMomentsLeavesNoProbeAndTheTargetsCodeAsItWas() throws Exception {
    ProbedCode.runTrials("kill-alloc-KILL", TRIALS, this::trial);
  }

  private ProbedCode.Trial trial(KillTrials.KillMoment moment) throws Exception {
    Process target = new ProcessBuilder(Workloads.binary("alloc_until_eof").toString())
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(
        new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8));
    try {
      assertEquals("ready", out.readLine());
      int pid = (int) target.pid();
      Map<String, ProbedCode.Site> sites = sites(pid);
      boolean attached;
      boolean breakpoint = false;
      try (Distribution.Running polystack = Distribution.start("record", "--event", "alloc",
          "--pid", Integer.toString(pid), "-o", dir.resolve("k" + moment.trial() + ".pb.gz")
              .toString())) {
        attached = KillTrials.awaitKillMoment(moment, polystack,
            () -> !AllocationProfileTest.ownLinks(polystack.pid()).isEmpty(), 20);
        if (attached) {
          breakpoint = sites.values().stream().anyMatch(s -> s.breakpointIn(pid));
        }
        polystack.signal("KILL");
        assertTrue(polystack.process().waitFor(30, TimeUnit.SECONDS), "polystack lived on");
      }
      String problem = KillTrials.notAttachedProblem(moment, attached);
      if (problem == null) {
        problem = afterKill(moment, pid, sites, target, out);
      }
      return new ProbedCode.Trial(moment, attached, breakpoint, problem);
    } finally {
      target.destroyForcibly();
      target.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** What is wrong once polystack is gone: a link left, changed code, a harmed target. */
  private static String afterKill(KillTrials.KillMoment moment, int pid, Map<String, ProbedCode.Site> sites,
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
    return ProbedCode.untouchedAndFinishes(moment, pid, sites, target, out);
  }

  /**
   * The probed functions of the C library process {@code pid} maps (ProbedCode.sites).
   */
  private static Map<String, ProbedCode.Site> sites(int pid) throws Exception {
    String libc = null;
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/maps"))) {
      String[] f = line.trim().split("\\s+");
      if (f.length >= 6 && f[5].contains("/libc.so") && f[1].contains("x")) {
        libc = f[5];
      }
    }
    assertTrue(libc != null, "process " + pid + " maps no C library");
    Map<String, ProbedCode.Site> sites = ProbedCode.sites(pid,
        Path.of("/proc/" + pid + "/root" + libc), libc, SITES, true);
    assertTrue(sites.keySet().containsAll(List.of("malloc", "free", "realloc")), "" + sites);
    return sites;
  }
}
