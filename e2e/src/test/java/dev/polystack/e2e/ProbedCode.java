package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the uprobe kill trials (allocation probes, probe monitors) share: where a probed
 * function's first bytes are in the target and in its file, found with binutils and
 * /proc/PID/maps independently of polystack's ELF reader, and the trials' run and report.
 */
final class ProbedCode {
  /** Bytes compared at each probed function. */
  static final int BYTES = 16;

  private ProbedCode() {}

  /** {@code length} bytes of process {@code pid}'s memory at {@code address}, as it runs now. */
  static byte[] live(int pid, long address, int length) {
    byte[] b = new byte[length];
    try (RandomAccessFile mem = new RandomAccessFile("/proc/" + pid + "/mem", "r")) {
      mem.seek(address);
      mem.readFully(b);
    } catch (java.io.IOException e) {
      throw new AssertionError("cannot read process " + pid + " at 0x"
          + Long.toHexString(address), e);
    }
    return b;
  }

  /** A probed function: where its first bytes are in the target, and what the file holds there. */
  record Site(long address, byte[] file) {
    byte[] live(int pid) {
      return ProbedCode.live(pid, address, BYTES);
    }

    /** The int3 a uprobe writes is on the function's first byte now. */
    boolean breakpointIn(int pid) {
      return live(pid)[0] == (byte) 0xcc;
    }

    /** Null if the target's bytes equal the file's, else what differs. */
    String differs(int pid, String name) {
      byte[] live = live(pid);
      return java.util.Arrays.equals(live, file) ? null
          : name + "'s code differs from the file: " + hex(live) + " against " + hex(file);
    }
  }

  /** One trial, killing polystack at {@code moment}. */
  interface TrialAt {
    Trial run(KillTrials.KillMoment moment) throws Exception;
  }

  /** One trial: when polystack was killed, and what, if anything, was wrong afterwards. */
  record Trial(KillTrials.KillMoment moment, boolean attachedAtKill, boolean breakpointSeen,
      String problem) {}

  /**
   * Runs {@code trials} kills one at a time (after each, the host's link list, which names no
   * process, must empty), reports them as {@code name}, and fails on any problem or when the
   * breakpoint was not seen in every trial killed while attached (the code check is blind).
   */
  static void runTrials(String name, int trials, TrialAt trial) throws Exception {
    long seed = KillTrials.seed();
    List<KillTrials.KillMoment> moments = KillTrials.moments(seed, trials, 2500, 1000);
    long started = System.nanoTime();
    List<Trial> results = KillTrials.run(trials, 1, n -> trial.run(moments.get(n)));
    List<String> problems = results.stream().map(Trial::problem)
        .filter(java.util.Objects::nonNull).toList();
    long attached = results.stream().filter(Trial::attachedAtKill).count();
    long seen = results.stream().filter(Trial::breakpointSeen).count();
    Reliability.report(name, String.format("trials=%d harmed=%d attached_at_kill=%d"
        + " breakpoints_seen_while_attached=%d seconds=%.0f seed=%d moments=%s%s", trials,
        problems.size(), attached, seen, (System.nanoTime() - started) / 1e9, seed, moments,
        problems.isEmpty() ? "" : " problems=" + problems));
    assertEquals(List.of(), problems, "replay: -Dreliability.seed=" + seed);
    assertTrue(seen > 0 && seen == attached, "the probes' breakpoints were seen in " + seen
        + " of the " + attached + " trials killed while attached: the code check is blind");
  }

  /**
   * The {@code symbols} of {@code file} (its dynamic symbols if {@code dynamic}) as process
   * {@code pid} maps them from {@code mappedPath}: each one's file offset (from the PT_LOAD
   * holding it, as a uprobe's), its address in the process, and the file's bytes there.
   */
  static Map<String, Site> sites(int pid, Path file, String mappedPath,
      Collection<String> symbols, boolean dynamic) throws Exception {
    List<long[]> executable = new ArrayList<>(); // start, end, file offset
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/maps"))) {
      String[] f = line.trim().split("\\s+");
      if (f.length >= 6 && f[5].equals(mappedPath) && f[1].contains("x")) {
        String[] range = f[0].split("-");
        executable.add(new long[] {Long.parseUnsignedLong(range[0], 16),
            Long.parseUnsignedLong(range[1], 16), Long.parseUnsignedLong(f[2], 16)});
      }
    }
    assertTrue(!executable.isEmpty(), "process " + pid + " maps no code of " + mappedPath);
    List<long[]> loads = new ArrayList<>(); // offset, vaddr, filesz
    Matcher load = Pattern.compile("(?m)^\\s*LOAD\\s+0x(\\p{XDigit}+) 0x(\\p{XDigit}+)"
        + " 0x\\p{XDigit}+ 0x(\\p{XDigit}+)").matcher(
            Tools.run(30, null, List.of("readelf", "-lW", file.toString())).stdout());
    while (load.find()) {
      loads.add(new long[] {Long.parseLong(load.group(1), 16), Long.parseLong(load.group(2), 16),
          Long.parseLong(load.group(3), 16)});
    }
    Map<String, Long> values = new LinkedHashMap<>();
    List<String> nm = dynamic ? List.of("nm", "-D", "--defined-only", file.toString())
        : List.of("nm", "--defined-only", file.toString());
    for (String line : Tools.run(30, null, nm).stdout().split("\n")) {
      String[] f = line.trim().split("\\s+");
      String name = f.length == 3 ? f[2].replaceAll("@.*", "") : "";
      if (symbols.contains(name) && "TtWi".indexOf(f[1].charAt(0)) >= 0) {
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
        assertTrue(offset >= 0 && address >= 0, e.getKey() + " not found in " + mappedPath);
        byte[] bytes = new byte[BYTES];
        elf.seek(offset);
        elf.readFully(bytes);
        sites.put(e.getKey(), new Site(address, bytes));
      }
    }
    return sites;
  }

  /**
   * Null if, polystack gone, every site's code equals its file's and the target, told by the
   * end of its stdin to finish, prints its "done " line and exits 0 with no thread left
   * stopped; else what went wrong at {@code moment}.
   */
  static String untouchedAndFinishes(KillTrials.KillMoment moment, int pid,
      Map<String, Site> sites, Process target, java.io.BufferedReader out) throws Exception {
    for (Map.Entry<String, Site> e : sites.entrySet()) {
      String differs = e.getValue().differs(pid, e.getKey());
      if (differs != null) {
        return moment + ": " + differs;
      }
    }
    List<Reliability.TaskState> stopped = KillTrials.stoppedAfterRelease(pid);
    if (!stopped.isEmpty()) {
      return moment + ": target threads stopped: " + stopped;
    }
    target.getOutputStream().close();
    String done = out.readLine();
    if (!target.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
      return moment + ": the target did not exit after its stdin closed";
    }
    if (target.exitValue() != 0 || done == null || !done.startsWith("done ")) {
      return moment + ": target exited " + target.exitValue() + " after \"" + done + "\"";
    }
    return null;
  }

  static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02x", x & 0xff));
    }
    return sb.toString();
  }
}
