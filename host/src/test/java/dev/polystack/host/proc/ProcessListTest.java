package dev.polystack.host.proc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import com.google.re2j.Pattern;
import java.util.OptionalLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Selection by name and descent over a prepared /proc; the live /proc is RecordMultiTargetTest's. */
class ProcessListTest {
  @TempDir Path root;
  private ProcessList list;

  private void process(int pid, int ppid, String comm, String... args) throws Exception {
    processOf(0, pid, ppid, comm, args);
  }

  private void processOf(int uid, int pid, int ppid, String comm, String... args)
      throws Exception {
    Path dir = Files.createDirectories(root.resolve(Integer.toString(pid)));
    Files.writeString(dir.resolve("status"), "Name:\t" + comm + "\nState:\tS (sleeping)\nTgid:\t"
        + pid + "\nPid:\t" + pid + "\nPPid:\t" + ppid + "\nTracerPid:\t0\nUid:\t" + uid + "\t"
        + uid + "\t" + uid + "\t" + uid + "\n");
    Files.writeString(dir.resolve("stat"), pid + " (" + comm + ") S " + ppid + " " + pid
        + " 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " + (1000 + pid) + " 0 0" + " 0".repeat(20)
        + "\n");
    Files.write(dir.resolve("cmdline"),
        (args.length == 0 ? "" : String.join("\0", args) + "\0").getBytes(StandardCharsets.UTF_8));
  }

  @BeforeEach
  void setUp() throws Exception {
    process(1, 0, "init", "/sbin/init");
    process(2, 0, "kthreadd"); // a kernel thread: no command line
    process(100, 1, "bash", "-bash");
    process(200, 100, "sudo", "sudo", "./polystack", "record", "--comm", "nginx");
    process(300, 200, "java", "java", "-jar", "polystack-host.jar", "record", "--comm", "nginx");
    process(400, 1, "nginx", "nginx: master process /usr/sbin/nginx");
    process(401, 400, "nginx", "nginx: worker process");
    process(402, 401, "sh", "sh", "-c", "gzip x");
    process(500, 1, "nginx-exporter", "/usr/bin/nginx-exporter");
    Files.createDirectories(root.resolve("self"));
    Files.createDirectories(root.resolve("999")); // exited while listed: no files
    list = ProcessList.read(ProcFs.at(root), new ProcessList.Scan(true, OptionalLong.empty()));
  }

  @Test
  void commIsExactAndKernelThreadsAreLeftOut() {
    assertEquals(List.of(400, 401), pids(list.withComm("nginx")));
    assertEquals(List.of(), pids(list.withComm("kthreadd")));
    assertEquals(List.of(), pids(list.withComm("ngin")));
  }

  @Test
  void matchSearchesTheWholeCommandLine() {
    assertEquals(List.of(200, 300, 400, 401, 500),
        pids(list.withCommandLine(Pattern.compile("nginx"))));
    assertEquals(List.of(401), pids(list.withCommandLine(Pattern.compile("worker process$"))));
  }

  @Test
  void descendantsOfEveryRootAtAnyDepth() {
    assertEquals(Set.of(400, 401, 402), list.withDescendants(List.of(400)));
    assertEquals(Set.of(401, 402, 500), list.withDescendants(List.of(401, 500)));
  }

  @Test
  void polystackAndTheSudoThatRanItAreItsOwnButTheShellIsNot() {
    assertEquals(Set.of(300, 200), list.selfAndLauncher(300));
    assertEquals(Set.of(401), list.selfAndLauncher(401));
  }

  @Test
  void theTreeScanReadsNoCommandLinesButKnowsStartTimesAndOwners() throws Exception {
    ProcessList tree = ProcessList.read(ProcFs.at(root));
    assertEquals(List.of(1, 100, 200, 300, 400, 401, 402, 500), pids(List.copyOf(tree.entries())));
    assertEquals("", tree.get(400).orElseThrow().commandLine());
    assertEquals(1400L, tree.get(400).orElseThrow().startTicks());
    assertEquals(Set.of(300, 200), tree.selfAndLauncher(300), "reads the launcher's own line");
  }

  @Test
  void aUserNarrowsTheProcessesRead() throws Exception {
    processOf(65534, 600, 1, "nginx", "nginx: worker process");
    ProcessList nobody = ProcessList.read(ProcFs.at(root),
        new ProcessList.Scan(true, OptionalLong.of(65534)));
    assertEquals(List.of(600), pids(nobody.withComm("nginx")));
    ProcessList all = ProcessList.read(ProcFs.at(root));
    assertEquals(List.of(400, 401, 600), pids(all.withComm("nginx")));
    assertEquals(65534L, all.get(600).orElseThrow().euid());
  }

  @Test
  void commandLinesAreCutPerProcessAndCappedInAll() throws Exception {
    String longArg = "a".repeat(ProcessList.MAX_COMMAND_LINE_BYTES);
    processOf(65534, 700, 1, "long", "long", longArg, "MyApp");
    ProcessList one = ProcessList.read(ProcFs.at(root),
        new ProcessList.Scan(true, OptionalLong.of(65534)));
    assertEquals(ProcessList.MAX_COMMAND_LINE_BYTES,
        one.get(700).orElseThrow().commandLine().length());
    assertEquals(List.of(), pids(one.withCommandLine(Pattern.compile("MyApp"))),
        "nothing past the per-process cap is matched");

    long perProcess = ProcessList.MAX_COMMAND_LINE_BYTES;
    for (int i = 0; i <= ProcessList.MAX_COMMAND_LINES_BYTES / perProcess; i++) {
      processOf(65534, 1000 + i, 1, "long", "long", longArg);
    }
    ProcessList.TooLargeException e = assertThrows(ProcessList.TooLargeException.class,
        () -> ProcessList.read(ProcFs.at(root), new ProcessList.Scan(true, OptionalLong.empty())));
    assertEquals("the command lines to match exceed 32 MiB in all (the limit of one --match, at"
        + " most 128 KiB of each process); narrow the processes read with --user NAME, or select"
        + " with --comm or --pid", e.getMessage());
    assertEquals(List.of(400, 401), pids(ProcessList.read(ProcFs.at(root)).withComm("nginx")),
        "a tree scan (--comm) reads no command line, so the cap never applies");
  }

  private static List<Integer> pids(List<ProcessList.Entry> entries) {
    return entries.stream().map(ProcessList.Entry::pid).toList();
  }
}
