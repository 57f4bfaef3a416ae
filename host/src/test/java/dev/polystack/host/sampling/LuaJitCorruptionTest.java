package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcessMaps;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.snapshot.Snapshot;
import dev.polystack.host.snapshot.SnapshotFile;
import dev.polystack.host.snapshot.SnapshotModules;
import dev.polystack.plugin.api.Registers;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Hostile memory for the LuaJIT walk (issue 8): the recorded snapshot corpus is replayed with
 * what the plug-in reads corrupted: bit flips and hostile words in stack slots, frame links,
 * prototypes, strings, line and variable tables and trace records (each picked among the reads
 * the plug-in made in a clean replay), pointers into unmapped memory and back at structures
 * already read (cycles), frame links that point at themselves or nearby, and reads cut short or
 * failing. Per case the threads with corrupted memory are walked and the process is refreshed
 * (the plug-in reports its JIT traces' code ranges there, as read by the walk); one case in
 * {@link #FRESH_EVERY} starts from a fresh plug-in instance so
 * its caches (names, lines, prototypes) do not hide corrupted strings and tables.
 *
 * <p>Asserted per case: nothing escapes (the walk returns, no plug-in call throws into its
 * guard), reads per case at most {@link #MAX_READS_PER_CASE}, no read asks for more than
 * {@link #MAX_READ_LENGTH} bytes, at most {@link #MAX_ALLOCATED_PER_CASE} bytes allocated by the
 * walking thread (ThreadMXBean), and a LuaJIT error frame always comes with a plug-in counter.
 *
 * <p>{@code -Dluajit.corrupt.cases} (default 100000), {@code -Dluajit.corrupt.seed} (default:
 * random, printed): case N of a seed is reproducible on its own with {@code
 * -Dluajit.corrupt.first=N -Dluajit.corrupt.cases=1}.
 */
class LuaJitCorruptionTest {
  static final Path CORPUS = Path.of("src/test/resources/snapshots");
  /**
   * Reads of target memory in one case (the walks plus a refresh). The walk's own loops
   * bound it: LuaStack.MAX_FRAMES (1024) frames of a few reads each, name inference scans of
   * Names.WINDOW instructions, Traces.MAX_TRACES traces at refresh; a clean case makes ~100-400.
   */
  static final long MAX_READS_PER_CASE = 100_000;
  /**
   * The largest single read: the trace array at its bound (8 x Traces.MAX_TRACES bytes), and a
   * trace's machine code scanned for calls (TraceSnapshots.MAX_SCANNED_MCODE, the same 512 KiB).
   */
  static final int MAX_READ_LENGTH = 8 << 16;
  /** Bytes the walking thread may allocate in one case (a clean case takes well under 1 MiB). */
  static final long MAX_ALLOCATED_PER_CASE = 16L << 20;
  static final int FRESH_EVERY = 32;

  /** One corpus case, set up once, with memories the cases corrupt. */
  private static final class Subject {
    final String name;
    final Snapshot snapshot;
    final SnapshotModules modules;
    final ProcessMaps maps;
    final PluginRegistry plugins;
    final CorruptibleMemory process;
    final Map<Integer, CorruptibleMemory> threads = new LinkedHashMap<>();
    final List<String> warnings = new ArrayList<>();
    final PluginGuard guard = new PluginGuard(warnings::add);
    final StackWalker walker;
    TargetProcess target;
    List<CorruptibleMemory.Span> processTargets;
    final Map<Integer, List<CorruptibleMemory.Span>> threadTargets = new LinkedHashMap<>();
    final Map<Integer, RawStack> clean = new LinkedHashMap<>();

    Subject(Path file) throws Exception {
      String n = file.getFileName().toString();
      name = n.substring(0, n.length() - ".psnap".length());
      snapshot = SnapshotFile.read(file);
      modules = SnapshotModules.resolve(snapshot, List.of(CORPUS.resolve("modules")));
      maps = ProcessMaps.of(snapshot.mappings());
      plugins = new PluginLoader().load(List.of());
      process = new CorruptibleMemory(snapshot.processMemory());
      for (Snapshot.ThreadRecord t : snapshot.threads()) {
        threads.put(t.tid(), new CorruptibleMemory(t.memory()));
      }
      walker = new StackWalker(snapshot.maxDepth(), guard);
      fresh();
    }

    void fresh() throws Exception {
      if (target != null) {
        target.close();
      }
      target = new TargetProcess(snapshot.pid(), () -> maps, modules, process.asHost(), plugins,
          guard, m -> { });
      target.refresh();
    }

    Map<Integer, RawStack> walkAll() throws Exception {
      target.refresh();
      return walk(snapshot.threads());
    }

    /**
     * One case: a refresh when the process memory is corrupted (the plug-in re-reads its traces
     * there) or the instance is fresh, then a walk of the threads whose memory is corrupted (of
     * every thread when only the process memory is).
     */
    Map<Integer, RawStack> walkCorrupted(boolean refreshed) throws Exception {
      if (process.corrupted() && !refreshed) {
        target.refresh();
      }
      List<Snapshot.ThreadRecord> which = snapshot.threads().stream()
          .filter(t -> threads.get(t.tid()).corrupted()).toList();
      Map<Integer, RawStack> out = walk(which.isEmpty() ? snapshot.threads() : which);
      // As between live samples: the next refresh asks for code ranges, which include the
      // JIT traces a walk may just have read from corrupted memory.
      target.refresh();
      return out;
    }

    private Map<Integer, RawStack> walk(List<Snapshot.ThreadRecord> which) {
      Map<Integer, RawStack> out = new LinkedHashMap<>();
      for (Snapshot.ThreadRecord t : which) {
        Registers regs = Registers.of(t.registers());
        out.put(t.tid(), walker.walk(new CapturedThread(snapshot.pid(), t.tid(), regs,
            threads.get(t.tid()), regs.sp(), 0), target.table()));
      }
      return out;
    }

    /** A clean replay with read discovery on: what the plug-in reads is what gets corrupted. */
    void discover() throws Exception {
      process.discover(true);
      threads.values().forEach(m -> m.discover(true));
      fresh();
      clean.putAll(walkAll());
      walkAll();
      process.discover(false);
      threads.values().forEach(m -> m.discover(false));
      processTargets = process.pluginReads();
      threads.forEach((tid, m) -> threadTargets.put(tid, m.pluginReads()));
      target.getAndResetCounters();
      takeReads();
    }

    long[] takeReads() {
      long[] total = process.takeCounts();
      for (CorruptibleMemory m : threads.values()) {
        long[] c = m.takeCounts();
        total[0] += c[0];
        total[1] = Math.max(total[1], c[1]);
      }
      return total;
    }

    void clearCorruption() {
      process.clear();
      threads.values().forEach(CorruptibleMemory::clear);
    }
  }

  @Test
  void theLuaJitWalkSurvivesCorruptedMemory() throws Exception {
    int cases = Integer.getInteger("luajit.corrupt.cases", 100_000);
    int first = Integer.getInteger("luajit.corrupt.first", 0);
    long seed = Long.getLong("luajit.corrupt.seed", new SplittableRandom().nextLong());
    List<Subject> subjects = new ArrayList<>();
    try (Stream<Path> files = Files.list(CORPUS)) {
      for (Path f : files.filter(f -> f.toString().endsWith(".psnap")).sorted().toList()) {
        subjects.add(new Subject(f));
      }
    }
    assertTrue(subjects.size() >= 4, "corpus cases: " + subjects.size());
    for (Subject s : subjects) {
      s.discover();
      assertEquals(List.of(), s.warnings, s.name + ": a clean replay must not throw");
      assertTrue(s.threadTargets.values().stream().mapToInt(List::size).sum() > 10,
          s.name + ": plug-in reads found " + s.threadTargets);
      System.out.printf("[reliability] luajit-corruption %s: plug-in reads to corrupt: process"
          + " %d, threads %s%n", s.name, s.processTargets.size(), s.threadTargets.entrySet()
          .stream().map(e -> e.getKey() + "=" + e.getValue().size()).toList());
    }
    var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long me = Thread.currentThread().getId();
    Map<String, Long> outcomes = new TreeMap<>();
    Map<String, Long> reasons = new TreeMap<>();
    long maxReads = 0;
    long maxLength = 0;
    long maxAllocated = 0;
    long started = System.nanoTime();
    long cpuStarted = mx.getCurrentThreadCpuTime();
    for (int i = first; i < first + cases; i++) {
      Subject s = subjects.get(i % subjects.size());
      SplittableRandom rnd = new SplittableRandom(seed ^ (0x9E3779B97F4A7C15L * (i + 1)));
      String where = "seed " + seed + " case " + i + " (" + s.name + "; rerun with"
          + " -Dluajit.corrupt.seed=" + seed + " -Dluajit.corrupt.first=" + i
          + " -Dluajit.corrupt.cases=1)";
      String what = Corruptions.apply(rnd, s.process, s.processTargets, s.threads,
          s.threadTargets);
      long allocatedBefore = mx.getThreadAllocatedBytes(me);
      Map<Integer, RawStack> stacks;
      try {
        boolean fresh = i % FRESH_EVERY == 0;
        if (fresh) {
          s.fresh();
        }
        stacks = s.walkCorrupted(fresh);
      } catch (RuntimeException | Error e) {
        throw new AssertionError("escaped the walk: " + e + " at " + where + ": " + what, e);
      }
      long allocated = mx.getThreadAllocatedBytes(me) - allocatedBefore;
      Map<String, Long> counters = s.target.getAndResetCounters();
      long[] reads = s.takeReads();
      s.clearCorruption();
      if (!s.warnings.isEmpty()) {
        throw new AssertionError("a plug-in call threw: " + s.warnings + " at " + where + ": "
            + what);
      }
      assertTrue(reads[0] <= MAX_READS_PER_CASE, reads[0] + " reads at " + where + ": " + what);
      assertTrue(reads[1] <= MAX_READ_LENGTH, "a read of " + reads[1] + " bytes at " + where
          + ": " + what);
      assertTrue(allocated <= MAX_ALLOCATED_PER_CASE, allocated + " bytes allocated at " + where
          + ": " + what);
      maxReads = Math.max(maxReads, reads[0]);
      maxLength = Math.max(maxLength, reads[1]);
      maxAllocated = Math.max(maxAllocated, allocated);
      boolean luajitError = false;
      for (RawStack st : stacks.values()) {
        for (String e : st.errors()) {
          if (e.startsWith("luajit_")) {
            luajitError = true;
            reasons.merge(e, 1L, Long::sum);
          }
        }
      }
      boolean counted = counters.keySet().stream()
          .anyMatch(k -> k.startsWith("luajit.") || k.startsWith("plugin.luajit."));
      if (luajitError && !counted) {
        throw new AssertionError("a LuaJIT error frame without a counter at " + where + ": "
            + what + "; counters " + counters);
      }
      String outcome = luajitError ? "luajit_error_frame"
          : stacks.entrySet().stream().allMatch(e -> e.getValue().equals(s.clean.get(e.getKey())))
              ? "unchanged" : "changed_without_luajit_error";
      outcomes.merge(outcome, 1L, Long::sum);
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    double cpu = (mx.getCurrentThreadCpuTime() - cpuStarted) / 1e9;
    System.out.printf("[reliability] luajit-corruption: seed=%d cases=%d seconds=%.1f cpu=%.1f"
        + " outcomes=%s max_reads_per_case=%d max_read_bytes=%d max_allocated_per_case=%d"
        + " top_reasons=%s%n", seed, cases, seconds, cpu, outcomes, maxReads, maxLength,
        maxAllocated,
        top(reasons, 12));
    for (Subject s : subjects) {
      s.target.close();
    }
  }

  private static Map<String, Long> top(Map<String, Long> counts, int n) {
    Map<String, Long> out = new LinkedHashMap<>();
    counts.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed())
        .limit(n).forEach(e -> out.put(e.getKey(), e.getValue()));
    return out;
  }
}
