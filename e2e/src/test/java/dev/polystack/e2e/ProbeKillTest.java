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

  /** One trial: when polystack was killed, and what, if anything, was wrong afterwards. */
  private record Trial(KillTrials.KillMoment moment, boolean attachedAtKill,
      boolean breakpointSeen, String problem) {}

  /** The kernel objects a polystack holds: its uprobe_multi links and their programs. */
  private record Owned(List<String> links, List<String> programs) {}

  @Test
  void sigkillAtRandomMomentsLeavesNoProbeAndTheTargetsCodeAsItWas() throws Exception {
    long seed = KillTrials.seed();
    List<KillTrials.KillMoment> moments = KillTrials.moments(seed, TRIALS, 2500, 1000);
    long started = System.nanoTime();
    List<Trial> results = KillTrials.run(TRIALS, 1, n -> trial(moments.get(n)));
    List<String> problems = results.stream().map(Trial::problem)
        .filter(java.util.Objects::nonNull).toList();
    long attached = results.stream().filter(Trial::attachedAtKill).count();
    long seen = results.stream().filter(Trial::breakpointSeen).count();
    Reliability.report("kill-probe-KILL", String.format("trials=%d harmed=%d attached_at_kill=%d"
        + " breakpoints_seen_while_attached=%d seconds=%.0f seed=%d moments=%s%s", TRIALS,
        problems.size(), attached, seen, (System.nanoTime() - started) / 1e9, seed, moments,
        problems.isEmpty() ? "" : " problems=" + problems));
    assertEquals(List.of(), problems, "replay: -Dreliability.seed=" + seed);
    assertTrue(seen > 0 && seen == attached, "the breakpoint was seen in " + seen + " of the "
        + attached + " trials killed while attached: the code check is blind");
  }

  private Trial trial(KillTrials.KillMoment moment) throws Exception {
    Path binary = Workloads.binary("probe_target");
    Process target = new ProcessBuilder(binary.toString(), "loop")
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(
        new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8));
    try {
      assertEquals("ready", out.readLine());
      int pid = (int) target.pid();
      Site site = site(pid, binary);
      boolean attached;
      boolean breakpoint = false;
      Owned owned = new Owned(List.of(), List.of());
      try (Distribution.Running polystack = Distribution.start("probe", "--pid",
          Integer.toString(pid), "probe_target:" + SYMBOL, "--monitor", "latency")) {
        attached = KillTrials.awaitKillMoment(moment, polystack,
            () -> !owned(polystack.pid()).links().isEmpty(), 20);
        if (attached) {
          owned = owned(polystack.pid());
          breakpoint = site.live(pid)[0] == (byte) 0xcc;
        }
        polystack.signal("KILL");
        assertTrue(polystack.process().waitFor(30, TimeUnit.SECONDS), "polystack lived on");
      }
      String problem = KillTrials.notAttachedProblem(moment, attached);
      if (problem == null) {
        problem = afterKill(moment, pid, site, owned, target, out);
      }
      return new Trial(moment, attached, breakpoint, problem);
    } finally {
      target.destroyForcibly();
      target.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** What is wrong once polystack is gone: a link or program left, changed code, harm. */
  private static String afterKill(KillTrials.KillMoment moment, int pid, Site site, Owned owned,
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
    byte[] live = site.live(pid);
    if (!Arrays.equals(live, site.file())) {
      return moment + ": " + SYMBOL + "'s code differs from the file: " + hex(live)
          + " against " + hex(site.file());
    }
    List<Reliability.TaskState> stopped = KillTrials.stoppedAfterRelease(pid);
    if (!stopped.isEmpty()) {
      return moment + ": target threads stopped: " + stopped;
    }
    target.getOutputStream().close(); // end of input: the threads stop and the target exits
    String done = out.readLine();
    if (!target.waitFor(30, TimeUnit.SECONDS)) {
      return moment + ": the target did not exit after its stdin closed";
    }
    if (target.exitValue() != 0 || done == null || !done.startsWith("done ")) {
      return moment + ": target exited " + target.exitValue() + " after \"" + done + "\"";
    }
    return null;
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

  /** The probed function: its address in the target and the file's bytes there. */
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
   * {@link #SYMBOL} of {@code binary} mapped by process {@code pid}, found with binutils and
   * /proc/PID/maps, independently of polystack's ELF reader.
   */
  private static Site site(int pid, Path binary) throws Exception {
    Matcher sym = Pattern.compile("(?m)^(\\p{XDigit}+) T " + SYMBOL + "$").matcher(
        Tools.run(30, null, List.of("nm", binary.toString())).stdout());
    assertTrue(sym.find(), "no " + SYMBOL + " in " + binary);
    long value = Long.parseLong(sym.group(1), 16);
    long offset = -1;
    Matcher load = Pattern.compile("(?m)^\\s*LOAD\\s+0x(\\p{XDigit}+) 0x(\\p{XDigit}+)"
        + " 0x\\p{XDigit}+ 0x(\\p{XDigit}+)").matcher(
            Tools.run(30, null, List.of("readelf", "-lW", binary.toString())).stdout());
    while (load.find()) {
      long off = Long.parseLong(load.group(1), 16);
      long vaddr = Long.parseLong(load.group(2), 16);
      if (value >= vaddr && value < vaddr + Long.parseLong(load.group(3), 16)) {
        offset = value - vaddr + off;
      }
    }
    long address = -1;
    String real = binary.toRealPath().toString();
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/maps"))) {
      String[] f = line.trim().split("\\s+");
      if (f.length >= 6 && f[5].equals(real) && f[1].contains("x")) {
        String[] range = f[0].split("-");
        long start = Long.parseUnsignedLong(range[0], 16);
        long end = Long.parseUnsignedLong(range[1], 16);
        long fileOffset = Long.parseUnsignedLong(f[2], 16);
        if (offset >= fileOffset && offset < fileOffset + (end - start)) {
          address = start + offset - fileOffset;
        }
      }
    }
    assertTrue(offset >= 0 && address >= 0, SYMBOL + " not found in process " + pid);
    byte[] bytes = new byte[BYTES];
    try (RandomAccessFile elf = new RandomAccessFile(binary.toFile(), "r")) {
      elf.seek(offset);
      elf.readFully(bytes);
    }
    return new Site(address, bytes);
  }

  private static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02x", x & 0xff));
    }
    return sb.toString();
  }
}
