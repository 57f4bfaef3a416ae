package dev.polystack.host.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.polystack.host.cli.DumpFormat;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.session.DumpSession;
import dev.polystack.host.session.ReplaySession;
import dev.polystack.plugin.api.Frame;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Replays every recorded case under src/test/resources/snapshots and compares the stacks with
 * NAME.expected.txt (the live walk's own output when recorded), and the names of its Lua frames
 * with NAME.names.txt: the names LuaJIT itself gave the same workload's functions when the case
 * was recorded (record-corpus.sh, corpus_oracle.lua), an oracle that is not polystack; and its
 * native frames with NAME.gdb.txt, gdb's backtraces of the same thread just before and after
 * the snapshot, another. Then replays each case once per
 * recorded memory read with that read failing: the walk must end in error frames, never throw
 * or hang, and the failing read must actually be reached.
 *
 * <p>After an intended change to unwinding or naming, regenerate the expectations with
 * {@code -Dpolystack.rebase=true} (or {@code polystack analyze --rebase DIR}) and review the diff.
 */
class SnapshotCorpusTest {
  static final Path CORPUS = Path.of("src/test/resources/snapshots");
  static final boolean REBASE = Boolean.getBoolean("polystack.rebase");

  @TestFactory
  Stream<DynamicTest> corpus() throws IOException {
    List<Path> cases;
    try (Stream<Path> files = Files.list(CORPUS)) {
      cases = files.filter(f -> f.toString().endsWith(".psnap")).sorted().toList();
    }
    assertTrue(cases.size() >= 4, "corpus cases: " + cases);
    return cases.stream().flatMap(c -> Stream.of(
        DynamicTest.dynamicTest(name(c) + ": replay matches expected stacks", () -> replay(c)),
        DynamicTest.dynamicTest(name(c) + ": Lua frames have LuaJIT's own names",
            () -> namesAreLuaJits(c)),
        DynamicTest.dynamicTest(name(c) + ": every read fails in turn", () -> faults(c)),
        DynamicTest.dynamicTest(name(c) + ": native frames agree with gdb's backtrace",
            () -> nativeFramesAreGdbs(c))));
  }

  /**
   * The cases whose thread ran in LuaJIT's interpreter when recorded have a gdb oracle; gdb
   * cannot unwind from a JIT-compiled trace, so the others have none (docs/testing.md).
   */
  @TestFactory
  Stream<DynamicTest> gdbOracleCoversTheInterpreterCases() {
    return Stream.of("luajit-interpreter", "luajit-coroutines").map(n -> DynamicTest.dynamicTest(
        n + ": gdb unwound it", () -> assertTrue(GdbBacktraces.read(
            CORPUS.resolve(n + ".gdb.txt")).unwound(), n + ".gdb.txt: re-record the corpus")));
  }

  /**
   * The native frames of the snapshot's thread against gdb's backtraces of that thread taken
   * just before and just after the snapshot (record-corpus.sh): gdb's own unwinder and symbol
   * reader, not polystack's. The frames both backtraces share (same return addresses from the
   * root up) were on the stack throughout; each one gdb names must be among polystack's native
   * frames, in the same order, at the same address, under the same name. gdb names glibc's
   * entry by its internal symbol, __libc_start_main_impl, of which __libc_start_main (what
   * polystack shows) is the exported alias at the same address.
   */
  private static void nativeFramesAreGdbs(Path c) throws Exception {
    Path file = CORPUS.resolve(name(c) + ".gdb.txt");
    assertTrue(Files.isRegularFile(file), file + " is missing: run record-corpus.sh");
    GdbBacktraces gdb = GdbBacktraces.read(file);
    if (!gdb.unwound()) {
      // A JIT-compiled leaf: gdb has no unwind table for trace code (docs/testing.md).
      return;
    }
    Setup setup = setup(c);
    ReplaySession.Result r = setup.session().replay(setup.snapshot(), setup.modules(), null);
    DumpSession.ThreadDump thread = r.dump().threads().stream()
        .filter(t -> t.tid() == gdb.tid()).findFirst()
        .orElseThrow(() -> new AssertionError("no thread " + gdb.tid() + " in the snapshot"));
    List<Frame> natives = thread.frames().stream()
        .filter(f -> Frame.NATIVE.equals(f.type())).toList();
    int from = 0;
    int checked = 0;
    for (GdbBacktraces.GdbFrame g : gdb.shared()) {
      if (g.function().isEmpty()) {
        continue;
      }
      int at = -1;
      for (int i = from; i < natives.size() && at < 0; i++) {
        if (natives.get(i).address() == g.pc()) {
          at = i;
        }
      }
      assertTrue(at >= 0, name(c) + ": gdb's " + g + " is not among polystack's native frames"
          + " after the previous match, in order: " + describe(natives));
      String ours = natives.get(at).function();
      assertTrue(ours.equals(g.function()) || (ours + "_impl").equals(g.function()),
          name(c) + ": at 0x" + Long.toHexString(g.pc()) + " gdb names " + g.function()
              + ", polystack " + ours);
      from = at + 1;
      checked++;
    }
    assertTrue(checked >= 3, name(c) + ": only " + checked + " frames named by gdb: "
        + gdb.shared());
    // Nor does polystack add native frames there: from the first frame gdb named to the root,
    // each of polystack's is one of gdb's. (gdb's unnamed frames need not be polystack's:
    // LuaJIT's VM routines, unnamed in the stripped binary, show as the Lua frames they run.)
    Set<Long> gdbAddresses = new TreeSet<>();
    gdb.shared().forEach(g -> gdbAddresses.add(g.pc()));
    long firstNamed = gdb.shared().stream().filter(g -> !g.function().isEmpty()).findFirst()
        .orElseThrow().pc();
    boolean inSpan = false;
    for (Frame f : natives) {
      inSpan |= f.address() == firstNamed;
      assertTrue(!inSpan || gdbAddresses.contains(f.address()), name(c) + ": polystack's "
          + f.function() + "@0x" + Long.toHexString(f.address()) + " is not in gdb's "
          + gdb.shared());
    }
  }

  private static String describe(List<Frame> frames) {
    StringBuilder b = new StringBuilder();
    for (Frame f : frames) {
      b.append(b.length() == 0 ? "" : ", ").append(f.function()).append("@0x")
          .append(Long.toHexString(f.address()));
    }
    return b.toString();
  }

  private static String name(Path c) {
    String n = c.getFileName().toString();
    return n.substring(0, n.length() - ".psnap".length());
  }

  private static Setup setup(Path c) throws Exception {
    Snapshot s = SnapshotFile.read(c);
    SnapshotModules modules = SnapshotModules.resolve(s, List.of(CORPUS.resolve("modules")));
    List<String> warnings = new ArrayList<>();
    PluginGuard guard = new PluginGuard(warnings::add);
    PluginRegistry plugins = new PluginLoader().load(List.of());
    return new Setup(s, modules, guard, new ReplaySession(plugins, guard, warnings::add));
  }

  private record Setup(Snapshot snapshot, SnapshotModules modules, PluginGuard guard,
      ReplaySession session) {}

  private static void replay(Path c) throws Exception {
    Setup setup = setup(c);
    ReplaySession.Result r = setup.session().replay(setup.snapshot(), setup.modules(), null);
    String text = DumpFormat.text(r.dump());
    Path expected = CORPUS.resolve(name(c) + ".expected.txt");
    if (REBASE) {
      Files.writeString(expected, text, StandardCharsets.UTF_8);
      return;
    }
    assertEquals(Files.readString(expected), text, "replayed stacks of " + name(c));
    assertEquals(setup.snapshot().liveStacks(), text, "replay vs the live walk");
    assertEquals(0, r.misses(), "reads outside the recording: the replay took another path");
    assertEquals(List.of(), List.copyOf(setup.guard().failureCounts().keySet()));
    assertTrue(r.dump().threads().stream().flatMap(t -> t.frames().stream())
        .anyMatch(f -> !Frame.NATIVE.equals(f.type()) && !f.isError()), "runtime frames");
  }

  /**
   * Every Lua frame (a runtime frame with a chunk) is named as LuaJIT named that function when
   * the oracle sampled the workload: by its caller's bytecode (lj_debug_funcname), else "main
   * chunk" or "function <chunk:line>", debug.traceback's words. A function called from several
   * places may have several names; the frame's must be one of them. Builtins are left out:
   * polystack names them by their library name (string.format), LuaJIT by the call site.
   */
  private static void namesAreLuaJits(Path c) throws Exception {
    Path oracle = CORPUS.resolve(name(c) + ".names.txt");
    assertTrue(Files.isRegularFile(oracle), oracle + " is missing: run record-corpus.sh");
    Map<String, Set<String>> namesByFunction = new TreeMap<>();
    for (String line : Files.readAllLines(oracle)) {
      String[] f = line.split("\t");
      assertEquals(3, f.length, "oracle line: " + line);
      namesByFunction.computeIfAbsent(f[0], k -> new TreeSet<>()).add(f[1]);
    }
    Setup setup = setup(c);
    ReplaySession.Result r = setup.session().replay(setup.snapshot(), setup.modules(), null);
    int checked = 0;
    for (DumpSession.ThreadDump t : r.dump().threads()) {
      for (Frame f : t.frames()) {
        if (Frame.NATIVE.equals(f.type()) || f.isError() || f.file().isEmpty()) {
          continue;
        }
        String function = f.file() + ":" + f.startLine();
        Set<String> names = namesByFunction.get(function);
        assertTrue(names != null, "LuaJIT never ran " + function + " while the oracle sampled "
            + name(c) + " (" + namesByFunction.keySet() + "): re-record the corpus");
        assertTrue(names.contains(f.function()), name(c) + ": " + function + " is named '"
            + f.function() + "', LuaJIT names it " + names);
        checked++;
      }
    }
    assertTrue(checked >= 2, name(c) + ": only " + checked + " Lua frames checked");
  }

  private static void faults(Path c) throws Exception {
    Setup setup = setup(c);
    Snapshot s = setup.snapshot();
    List<ReplaySession.Fault> faults = new ArrayList<>();
    s.processMemory().reads().stream().filter(r -> !r.fault())
        .forEach(r -> faults.add(new ReplaySession.Fault(0, r)));
    for (Snapshot.ThreadRecord t : s.threads()) {
      t.memory().reads().stream().filter(r -> !r.fault())
          .forEach(r -> faults.add(new ReplaySession.Fault(t.tid(), r)));
    }
    String clean = DumpFormat.text(setup.session().replay(s, setup.modules(), null).dump());
    int[] changed = new int[1];
    assertTimeoutPreemptively(Duration.ofSeconds(90), () -> {
      for (ReplaySession.Fault f : faults) {
        ReplaySession.Result r;
        try {
          r = setup.session().replay(s, setup.modules(), f);
        } catch (RuntimeException e) {
          throw new AssertionError("fault " + f + " escaped as " + e, e);
        }
        if (r.injectedHits() == 0) {
          fail("injected fault " + f + " was never hit");
        }
        String text = DumpFormat.text(r.dump());
        if (!text.equals(clean)) {
          changed[0]++;
          boolean error = r.dump().threads().stream()
              .filter(t -> t.tid() == f.tid() || f.tid() == 0)
              .flatMap(t -> t.frames().stream()).anyMatch(Frame::isError);
          if (!error) {
            fail("fault " + f + " changed the stacks without an error frame:\n" + text);
          }
        }
      }
    });
    assertEquals(List.of(), List.copyOf(setup.guard().failureCounts().keySet()),
        "plug-in exceptions under injected faults");
    System.out.printf("%s: %d faults injected, all hit, %d changed the stacks (with error"
        + " frames)%n", name(c), faults.size(), changed[0]);
    assertTrue(faults.size() > 10, "faults: " + faults.size());
  }
}
