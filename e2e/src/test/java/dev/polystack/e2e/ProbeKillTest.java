package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * SIGKILL of {@code polystack probe --monitor latency} at random moments while 4 threads of the
 * target call the probed function (so returns are in flight: each call has its return probe
 * armed): after each kill, polystack's links and program are gone from the kernel (and tracefs's
 * uprobe_events is as it was: neither link writes it), the code at the probed address is the
 * file's byte for byte, and the target runs on and exits 0 when told.
 * While attached, the same read sees the breakpoint, so the code check is not blind.
 */
class ProbeKillTest {
  private static final int TRIALS = Reliability.intProperty("reliability.probeKillTrials", 8);
  private static final int BYTES = 16;
  private static final String SYMBOL = "probe_counted";
  /** tracefs's uprobe_events before the trials (empty when tracefs is not mounted). */
  private static final String UPROBE_EVENTS = uprobeEvents();

  /** The kernel objects a polystack holds: its uprobe_multi links and their programs. */
  private record Owned(List<String> links, List<String> programs) {}

  @Test
  void sigkillAtRandomMomentsLeavesNoProbeAndTheTargetsCodeAsItWas() throws Exception {
    ProbedCode.runTrials("kill-probe-KILL", TRIALS, this::trial);
  }

  private ProbedCode.Trial trial(KillTrials.KillMoment moment) throws Exception {
    Path binary = Workloads.binary("probe_target");
    Process target = new ProcessBuilder(binary.toString(), "loop")
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(
        new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8));
    try {
      assertEquals("ready", out.readLine());
      int pid = (int) target.pid();
      ProbedCode.Site site = ProbedCode.sites(pid, binary, binary.toRealPath().toString(),
          List.of(SYMBOL), false).get(SYMBOL);
      assertTrue(site != null, SYMBOL + " not found in process " + pid);
      boolean attached;
      boolean breakpoint = false;
      Owned owned = new Owned(List.of(), List.of());
      try (Distribution.Running polystack = Distribution.start("probe", "--pid",
          Integer.toString(pid), "probe_target:" + SYMBOL, "--monitor", "latency")) {
        attached = KillTrials.awaitKillMoment(moment, polystack,
            () -> !owned(polystack.pid()).links().isEmpty(), 20);
        if (attached) {
          owned = owned(polystack.pid());
          breakpoint = site.breakpointIn(pid);
        }
        polystack.signal("KILL");
        assertTrue(polystack.process().waitFor(30, TimeUnit.SECONDS), "polystack lived on");
      }
      String problem = KillTrials.notAttachedProblem(moment, attached);
      if (problem == null) {
        problem = afterKill(moment, pid, site, owned, target, out);
      }
      return new ProbedCode.Trial(moment, attached, breakpoint, problem);
    } finally {
      target.destroyForcibly();
      target.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** What is wrong once polystack is gone: a link or program left, changed code, harm. */
  private static String afterKill(KillTrials.KillMoment moment, int pid, ProbedCode.Site site,
      Owned owned,
      Process target, BufferedReader out) throws Exception {
    long deadline = System.nanoTime() + 10_000_000_000L;
    List<String> left = present(owned);
    while (!left.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(50);
      left = present(owned);
    }
    if (!left.isEmpty()) {
      return moment + ": left in the kernel: " + left;
    }
    // Neither link kind writes tracefs; a change there would be a probe of another kind.
    String events = uprobeEvents();
    if (!events.equals(UPROBE_EVENTS)) {
      return moment + ": uprobe_events changed: \"" + UPROBE_EVENTS + "\" -> \"" + events + "\"";
    }
    return ProbedCode.untouchedAndFinishes(moment, pid, java.util.Map.of(SYMBOL, site), target,
        out);
  }

  private static String uprobeEvents() {
    for (String dir : List.of("/sys/kernel/tracing", "/sys/kernel/debug/tracing")) {
      try {
        return Files.readString(Path.of(dir, "uprobe_events"));
      } catch (java.io.IOException e) {
        // not mounted there
      }
    }
    return "";
  }

  /** The links and programs of {@code owned} that bpftool still lists. */
  private static List<String> present(Owned owned) throws Exception {
    List<String> out = new ArrayList<>();
    for (String link : owned.links()) {
      if (Tools.run(30, null, List.of("bpftool", "link", "show", "id", link)).exitCode() == 0) {
        out.add("link " + link);
      }
    }
    for (String prog : owned.programs()) {
      if (Tools.run(30, null, List.of("bpftool", "prog", "show", "id", prog)).exitCode() == 0) {
        out.add("program " + prog);
      }
    }
    return out;
  }

  /** The uprobe_multi links process {@code pid} holds, and their programs (from fdinfo). */
  private static Owned owned(long pid) throws java.io.IOException {
    List<String> links = new ArrayList<>();
    List<String> programs = new ArrayList<>();
    Pattern link = Pattern.compile("(?m)^link_id:\\s*(\\d+)$");
    Pattern prog = Pattern.compile("(?m)^prog_id:\\s*(\\d+)$");
    try (var fds = Files.list(Path.of("/proc/" + pid + "/fdinfo"))) {
      for (Path fd : fds.toList()) {
        try {
          String info = Files.readString(fd);
          Matcher l = link.matcher(info);
          Matcher p = prog.matcher(info);
          if ((info.contains("link_type:\tuprobe_multi") || info.contains("link_type:\t12"))
              && l.find() && p.find()) {
            links.add(l.group(1));
            programs.add(p.group(1));
          }
        } catch (java.io.IOException e) {
          // closed meanwhile
        }
      }
    } catch (java.io.IOException e) {
      // polystack is gone
    }
    return new Owned(links, programs);
  }
}
