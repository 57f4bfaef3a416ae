package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CPython example plug-in of docs/examples/cpython-plugin, as its author would ship it:
 * built with Maven against the installed plugin-api artifact (its own project, no parent),
 * loaded with --plugin-path, and recording real Pythons in bpf mode. The Python frames must
 * carry qualified names, the file and lines inside the function, sit where the evaluation loop
 * ran among the native frames, and share the samples as the program's own thread CPU clock
 * shares its time; a thread that hashes without the GIL must show its own Python stack.
 */
class CPythonPluginTest {
  /** Points the profile's share of heavy() may differ from the program's own clock. */
  static final double SHARE_TOLERANCE = 0.06;

  @TempDir static Path dir;
  private static Path pluginDir;

  /** Two functions of the same body; the program times each with its thread CPU clock. */
  static final String SHARES = """
      import sys, time

      def warm(n):
          total = 0
          for i in range(n):
              total += i * i
          return total

      def heavy(n):
          total = 0
          for i in range(n):
              total += i * i
          return total

      def light(n):
          total = 0
          for i in range(n):
              total += i * i
          return total

      class Work:
          def warm_up(self, cpu_seconds):
              end = time.thread_time() + cpu_seconds
              while time.thread_time() < end:
                  warm(10000)

          def run(self, cpu_seconds):
              h = l = 0
              end = time.thread_time() + cpu_seconds
              while time.thread_time() < end:
                  t0 = time.thread_time_ns()
                  heavy(30000)
                  t1 = time.thread_time_ns()
                  light(10000)
                  t2 = time.thread_time_ns()
                  h += t1 - t0
                  l += t2 - t1
              return h, l

      work = Work()
      work.warm_up(0.5)
      h, l = work.run(float(sys.argv[2]))
      with open(sys.argv[1], "w") as out:
          out.write(f"{h} {l}\\n")
      """;

  /**
   * Ahead of {@link #SHARES}: an exit handler that makes and drops code objects for 0.4 s, so the
   * module's code object, freed once its last line ran, is overwritten while the last samples'
   * records still wait to be walked.
   */
  static final String CHURN_AT_EXIT = """
      import atexit, time as churn_time

      def churn():
          end = churn_time.monotonic() + 0.4
          made = []
          while churn_time.monotonic() < end:
              made.append(compile("x = %d" % len(made), "<churn>", "exec"))
              if len(made) > 1000:
                  made.clear()

      atexit.register(churn)
      """;

  /** The main thread spins holding the GIL; one thread hashes without it; one sleeps. */
  static final String THREADS = """
      import hashlib, sys, threading, time

      def hash_loop(end):
          data = b"x" * (4 << 20)
          while time.monotonic() < end:
              hashlib.sha256(data).digest()

      def sleep_loop(end):
          while time.monotonic() < end:
              time.sleep(0.05)

      def spin(end):
          total = 0
          while time.monotonic() < end:
              for i in range(10000):
                  total += i

      end = time.monotonic() + float(sys.argv[1])
      threads = [threading.Thread(target=hash_loop, args=(end,)),
                 threading.Thread(target=sleep_loop, args=(end,))]
      for t in threads:
          t.start()
      spin(end)
      for t in threads:
          t.join()
      """;

  @BeforeAll
  static void build() throws Exception {
    pluginDir = CPythonExample.build(dir).pluginDir();
  }

  @Test
  void debianPython311() throws Exception {
    Path python = Path.of("/usr/bin/python3.11");
    assumeTrue(Files.isExecutable(python), "Debian's python3.11 not installed");
    checkShares(python);
  }

  @Test
  void pyenvPython311() throws Exception {
    Optional<Path> python = CPythonExample.pyenv("3.11.", "python3.11");
    assumeTrue(python.isPresent(), "pyenv python3.11 not installed");
    checkShares(python.get());
  }

  @Test
  void pyenvPython312() throws Exception {
    Optional<Path> python = CPythonExample.pyenv("3.12.", "python3.12");
    assumeTrue(python.isPresent(), "pyenv python3.12 not installed");
    checkShares(python.get());
  }

  /**
   * The walk reads code objects after the tick: the last samples before the exit, walked once
   * the module's code object was freed and its memory reused by an exit handler, still name
   * their frames (from the code objects the walks saw before, {@code code_freed_since_tick};
   * whether a record waits that long depends on when the host reads the ring, which the
   * example's CodeObjectsTest does not leave to chance).
   */
  @Test
  void samplesJustBeforeTheExitCarryNoErrorFrameOnPyenvPython311() throws Exception {
    Optional<Path> python = CPythonExample.pyenv("3.11.", "python3.11");
    assumeTrue(python.isPresent(), "pyenv python3.11 not installed");
    Shares run = checkShares(python.get(), CHURN_AT_EXIT + SHARES);
    assertEquals(0, run.measuredWithError(), "samples of heavy or light ending in an error frame"
        + " (the last ones before the exit, walked once the module's code was freed)\n"
        + run.stderr());
  }

  @Test
  void threadWithoutTheGilShowsItsOwnStackOnDebianPython311() throws Exception {
    Path python = Path.of("/usr/bin/python3.11");
    assumeTrue(Files.isExecutable(python), "Debian's python3.11 not installed");
    checkThreads(python);
  }

  @Test
  void threadWithoutTheGilShowsItsOwnStackOnPyenvPython312() throws Exception {
    Optional<Path> python = CPythonExample.pyenv("3.12.", "python3.12");
    assumeTrue(python.isPresent(), "pyenv python3.12 not installed");
    checkThreads(python.get());
  }

  private static void checkShares(Path python) throws Exception {
    checkShares(python, SHARES);
  }

  /** polystack's stderr, and the stacks in heavy or light that carry a plug-in error. */
  private record Shares(String stderr, long measuredWithError) {}

  /** Records {@code program} (ending as {@link #SHARES} does) and checks its shares. */
  private static Shares checkShares(Path python, String program) throws Exception {
    Path work = Files.createTempDirectory(dir, "shares");
    Path script = work.resolve("shares.py");
    Files.writeString(script, program);
    Path times = work.resolve("times.txt");
    Path folded = work.resolve("out.folded");
    var result = Distribution.run(work, java.util.Map.of(), "record", "--plugin-path",
        pluginDir.toString(), "--rate", "199", "-v", "-o", folded.toString(), "--",
        python.toString(), script.toString(), times.toString(), "2.5");
    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stderr().contains("target never stopped (bpf mode)"), result.stderr());
    // The walks took the thread state the plan reached at the tick (ThreadContext.planOutcome).
    assertTrue(result.stderr().contains("plugin.cpython.thread_state_from_tick"),
        result.stderr());
    String[] own = Files.readString(times).strip().split(" ");
    double ownHeavy = Double.parseDouble(own[0]);
    double ownShare = ownHeavy / (ownHeavy + Double.parseDouble(own[1]));

    FoldedStacks stacks = FoldedStacks.read(folded);
    String file = script.toString();
    long heavy = 0;
    long light = 0;
    long measuredWithError = 0;
    for (FoldedStacks.Stack s : stacks.stacks()) {
      int h = s.indexOf(f -> f.startsWith("heavy (" + file + ":"));
      int l = s.indexOf(f -> f.startsWith("light (" + file + ":"));
      if ((h >= 0 || l >= 0) && s.has(x -> x.startsWith("[error: cpython_"))) {
        measuredWithError += s.count();
      }
      // A walk that caught a frame changing under it says so with an error frame; those are
      // bounded below, not placed.
      if ((h < 0 && l < 0) || s.has(x -> x.startsWith("[error: cpython_"))) {
        continue;
      }
      int at = h >= 0 ? h : l;
      String leafFunction = h >= 0 ? "heavy" : "light";
      // Python frames where the evaluation loop ran: Work.run under the function, <module>
      // under it, and the native PyEval_EvalCode that entered the loop under that.
      List<String> f = s.frames();
      assertTrue(at >= 3 && f.get(at - 1).startsWith("Work.run (" + file + ":")
          && f.get(at - 2).startsWith("<module> (" + file + ":")
          && f.get(at - 3).equals("PyEval_EvalCode"), "Python frames out of place: " + s);
      assertFalse(s.has(x -> x.contains("_PyEval_EvalFrameDefault")),
          "the evaluation loop's native frame must be replaced: " + s);
      int line = Integer.parseInt(f.get(at).replaceAll(".*:(\\d+)\\)$", "$1"));
      int def = lineOf(program, "def " + leafFunction + "(n):");
      // The def line itself is the function's first instruction (RESUME) in the line table.
      assertTrue(line >= def && line <= def + 4, "line " + line + " is not in " + leafFunction
          + " (def at " + def + "): " + s);
      if (h >= 0) {
        heavy += s.count();
      } else {
        light += s.count();
      }
    }
    double share = (double) heavy / (heavy + light);
    long errors = stacks.count(s -> s.has(x -> x.startsWith("[error: cpython_")));
    String context = python + ": heavy " + heavy + ", light " + light + " samples, profile share "
        + String.format("%.3f", share) + ", the program's own " + String.format("%.3f", ownShare)
        + ", " + errors + " of " + stacks.samples() + " stacks with a plug-in error\n"
        + result.stderr();
    System.out.println("CPythonPluginTest shares: " + context.lines().findFirst().orElse(""));
    assertTrue(heavy + light >= 200, "too few samples in heavy and light: " + context);
    assertTrue(Math.abs(share - ownShare) <= SHARE_TOLERANCE, context);
    assertTrue(errors * 50 <= stacks.samples(), "more than 2% plug-in errors: " + context);
    return new Shares(result.stderr(), measuredWithError);
  }

  private static void checkThreads(Path python) throws Exception {
    Path work = Files.createTempDirectory(dir, "threads");
    Path script = work.resolve("threads.py");
    Files.writeString(script, THREADS);
    Path folded = work.resolve("out.folded");
    var result = Distribution.run(work, java.util.Map.of(), "record", "--plugin-path",
        pluginDir.toString(), "--per-thread", "-v", "-o", folded.toString(), "--",
        python.toString(), script.toString(), "2");
    assertEquals(0, result.exitCode(), result.stderr());
    String file = script.toString();
    FoldedStacks stacks = FoldedStacks.read(folded);
    long hashing = 0;
    for (FoldedStacks.Stack s : stacks.stacks()) {
      int sha = s.indexOf(f -> f.startsWith("SHA256_Update"));
      if (sha < 0) {
        continue;
      }
      // Hashing without the GIL: the hashing thread's own frames, never the spinner's.
      int loop = s.indexOf(f -> f.startsWith("hash_loop (" + file + ":"));
      assertTrue(loop >= 0 && loop < sha, "the hashing thread lost its Python frames: " + s);
      assertEquals("hash_loop (" + file + ":" + lineOf(THREADS, "hashlib.sha256(data)") + ")",
          s.frames().get(loop), s.toString());
      assertTrue(s.has(f -> f.startsWith("Thread.run (")), s.toString());
      assertFalse(s.has(f -> f.startsWith("spin (")), "another thread's frames: " + s);
      hashing += s.count();
    }
    long spinning = stacks.count(s -> s.has(f -> f.startsWith("spin (" + file + ":")));
    System.out.println("CPythonPluginTest threads: " + python + ": hashing without the GIL "
        + hashing + ", spinning " + spinning + " samples");
    assertTrue(hashing >= 10 && spinning >= 10, "hashing " + hashing + ", spinning " + spinning
        + " samples; expected both threads on CPU\n" + result.stderr());
  }


  /** 1-based line of the first line of {@code script} containing {@code text}. */
  private static int lineOf(String script, String text) {
    List<String> lines = script.lines().toList();
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).contains(text)) {
        return i + 1;
      }
    }
    throw new AssertionError("no '" + text + "' in the script");
  }

}
