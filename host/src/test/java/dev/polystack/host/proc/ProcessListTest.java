package dev.polystack.host.proc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Selection by name and descent over a prepared /proc; the live /proc is RecordMultiTargetTest's. */
class ProcessListTest {
  @TempDir Path root;
  private ProcessList list;

  private void process(int pid, int ppid, String comm, String... args) throws Exception {
    Path dir = Files.createDirectories(root.resolve(Integer.toString(pid)));
    Files.writeString(dir.resolve("status"), "Name:\t" + comm + "\nState:\tS (sleeping)\nTgid:\t"
        + pid + "\nPid:\t" + pid + "\nPPid:\t" + ppid + "\nTracerPid:\t0\nUid:\t0\t0\t0\t0\n");
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
    list = ProcessList.read(ProcFs.at(root));
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

  private static List<Integer> pids(List<ProcessList.Entry> entries) {
    return entries.stream().map(ProcessList.Entry::pid).toList();
  }
}
