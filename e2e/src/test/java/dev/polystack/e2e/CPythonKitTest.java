package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.ZipFile;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Element;

/**
 * The CPython example plug-in's own suite (docs/examples/cpython-plugin, README.md "Tests"),
 * run the way its author runs it: the example project is built with Maven against the installed
 * plugin-api artifact, cases are recorded from real Pythons running its
 * src/test/python/spinners.py (Debian's statically linked 3.11 alone and with parked threads,
 * pyenv's shared 3.12 with parked threads), and then {@code mvn test -Dcpython.cases=DIR} runs
 * the author kit on them in the example project. Every test of that suite must have run and
 * passed, none skipped. Each snapshot must hold every thread's FS base as gdb reads it from the
 * live process: the thread pointer the plan starts from.
 */
class CPythonKitTest {
  /** Processes recorded per case at most, until one snapshot walks the main thread first. */
  private static final int ATTEMPTS = 6;
  private static final Pattern GDB_THREAD = Pattern.compile("^Thread \\d+ \\(.*?LWP (\\d+)\\)");
  private static final Pattern GDB_VALUE = Pattern.compile("^\\$\\d+ = 0x([0-9a-f]+)$");
  /** A thread of the header: its tid, then (after its registers) its thread pointer. */
  private static final Pattern RECORDED = Pattern.compile(
      "\\{\"tid\":(\\d+),[^\\n]*?\"thread_pointer\":\"0x([0-9a-f]+)\"");

  @TempDir static Path dir;
  private static Path project;
  private static Path pluginDir;

  @BeforeAll
  static void build() throws Exception {
    CPythonExample.Built built = CPythonExample.build(dir);
    project = built.project();
    pluginDir = built.pluginDir();
    assertFalse(Files.exists(project.resolve("target/surefire-reports")), "without"
        + " -Dcpython.cases the example's suite must not run at all");
  }

  @Test
  void examplesOwnKitSuitePassesOnSnapshotsOfLivePythons() throws Exception {
    Path debian = Path.of("/usr/bin/python3.11");
    assertTrue(Files.isExecutable(debian), debian + " is missing (apt-get install python3.11)");
    Path pyenv = CPythonExample.pyenv("3.12.", "python3.12").orElseThrow(() -> new AssertionError(
        "pyenv's python3.12 is missing under /root/.pyenv/versions"));
    Path cases = Files.createDirectories(dir.resolve("cases"));
    record(debian, 0, cases.resolve("debian-3.11"));
    record(debian, 2, cases.resolve("debian-3.11-threads"));
    record(pyenv, 3, cases.resolve("pyenv-3.12-threads"));

    long start = System.nanoTime();
    var mvn = Tools.run(300, null, List.of("mvn", "-B", "-o", "-q", "-f",
        project.resolve("pom.xml").toString(), "test", "-Dcpython.cases=" + cases,
        "-Dcpython.python=" + debian));
    long millis = (System.nanoTime() - start) / 1_000_000;
    String counts = counts("CPythonConformanceTest", mvn);
    String codeObjects = counts("CodeObjectsTest", mvn);
    System.out.println("CPythonKitTest: the example's suite on 3 cases: " + counts
        + "; CodeObjectsTest: " + codeObjects + "; in " + millis + " ms");
    assertEquals(0, mvn.exitCode(), counts + "\n" + mvn.stdout() + mvn.stderr());
    // The descriptor, then three tests per case; the live Python's code objects once.
    assertEquals("tests 10, failures 0, errors 0, skipped 0", counts);
    assertEquals("tests 1, failures 0, errors 0, skipped 0", codeObjects);
  }

  /**
   * Records {@code name}.psnap from a Python running spinners.py with {@code threads} parked
   * threads, and checks its thread pointers against gdb's. The kit replays the thread in the evaluation loop on a
   * fresh instance, so the case must have walked it first (README.md, "Tests"): the snapshot
   * prints threads in the order it walked them, and a process whose order differs is recorded
   * again as a new process.
   */
  private static void record(Path python, int threads, Path name) throws Exception {
    Path script = project.resolve("src/test/python/spinners.py");
    Path snapshot = Path.of(name + ".psnap");
    String seen = "";
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
      Files.deleteIfExists(snapshot);
      try (Target target = Target.start(python, script.toString(), Integer.toString(threads))) {
        target.awaitOutput("ready", 20_000);
        Awaits.cpuTicks(target.pid(), 2, 20_000); // the main thread spinning in innermost()
        var gdb = Tools.run(60, null, List.of("gdb", "-batch", "-p",
            Integer.toString(target.pid()), "-ex", "thread apply all p/x $fs_base"));
        assertEquals(0, gdb.exitCode(), gdb.stderr());
        Map<Integer, Long> fsBases = fsBases(gdb.stdout());
        assertEquals(threads + 1, fsBases.size(), "one FS base per thread:\n" + gdb.stdout());
        var result = Distribution.run("--plugin-path", pluginDir.toString(), "snapshot", "--pid",
            Integer.toString(target.pid()), "-o", snapshot.toString(), "--embed-modules");
        assertEquals(0, result.exitCode(), result.stderr());
        assertEquals(threads + 1, result.stdout().lines().filter(l -> l.startsWith("Thread "))
            .count(), result.stdout());
        assertTrue(target.isAlive(), "the target must survive gdb and the snapshot");
        assertEquals(fsBases, recordedThreadPointers(snapshot), "the snapshot's thread pointers");
        seen = result.stdout();
        List<String> lines = seen.lines().toList();
        int first = lines.indexOf(lines.stream().filter(l -> l.startsWith("Thread "))
            .findFirst().orElseThrow());
        if (lines.get(first + 1).strip().startsWith("innermost (" + script + ":")) {
          System.out.println("CPythonKitTest: " + name.getFileName() + " recorded in "
              + (attempt + 1) + (attempt == 0 ? " attempt" : " attempts"));
          return;
        }
      }
    }
    throw new AssertionError(name + ": in " + ATTEMPTS + " recordings the first thread walked"
        + " was never the main thread in innermost(); the last:\n" + seen);
  }

  /** Kernel tid to FS base from gdb's {@code Thread N (... (LWP TID) ...):} and {@code $N = 0x...}. */
  private static Map<Integer, Long> fsBases(String gdb) {
    Map<Integer, Long> out = new TreeMap<>();
    Integer tid = null;
    for (String line : gdb.split("\n")) {
      Matcher thread = GDB_THREAD.matcher(line);
      Matcher value = GDB_VALUE.matcher(line.strip());
      if (thread.find()) {
        tid = Integer.valueOf(thread.group(1));
      } else if (value.matches() && tid != null) {
        out.put(tid, Long.parseUnsignedLong(value.group(1), 16));
        tid = null;
      }
    }
    return out;
  }

  /** Tid to {@code thread_pointer} of each thread in the snapshot's header. */
  private static Map<Integer, Long> recordedThreadPointers(Path snapshot) throws Exception {
    String header;
    try (ZipFile zip = new ZipFile(snapshot.toFile())) {
      header = new String(zip.getInputStream(zip.getEntry("snapshot.json")).readAllBytes(),
          StandardCharsets.UTF_8);
    }
    Map<Integer, Long> out = new TreeMap<>();
    Matcher m = RECORDED.matcher(header);
    while (m.find()) {
      out.put(Integer.valueOf(m.group(1)), Long.parseUnsignedLong(m.group(2), 16));
    }
    return out;
  }

  /** The counts of the example's surefire report for {@code testClass}. */
  private static String counts(String testClass, Tools.Output mvn) throws Exception {
    Path report = project.resolve("target/surefire-reports/TEST-example.cpython." + testClass
        + ".xml");
    assertTrue(Files.isRegularFile(report), "the example's " + testClass + " did not run:\n"
        + mvn.stdout() + mvn.stderr());
    Element suite = DocumentBuilderFactory.newInstance().newDocumentBuilder()
        .parse(report.toFile()).getDocumentElement();
    return "tests " + suite.getAttribute("tests") + ", failures "
        + suite.getAttribute("failures") + ", errors " + suite.getAttribute("errors")
        + ", skipped " + suite.getAttribute("skipped");
  }


}
