package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 31, finding 1: a root polystack inside a pid namespace (a container) records the process
 * its own /proc names, never the host process that has the same number. The attack: an idle
 * {@code sleep} in a new pid namespace whose pid there equals the host pid of a busy program;
 * before the capture matched pids in polystack's namespace, the busy program's ticks were
 * recorded as the sleep's.
 */
class PidNamespaceTest {
  @TempDir Path dir;

  @Test
  void insideAPidNamespaceTheSamePidOfAHostProcessIsNotRecorded() throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")), "needs root");
    Process busy = new ProcessBuilder(Workloads.binary("hot_cold").toString()).start();
    try {
      long hostPid = busy.pid();
      Path out = dir.resolve("ns.folded");
      // In the new namespace: the next pid is the busy program's host pid, taken by a sleep.
      List<String> polystack = new ArrayList<>(Distribution.command("record", "--mode", "bpf",
          "-d", "3s", "-o", out.toString(), "--pid", Long.toString(hostPid)));
      // The write is a builtin of its own: the shell's next fork is the sleep's.
      String script = "echo " + (hostPid - 1) + " > /proc/sys/kernel/ns_last_pid || exit 96; "
          + "sleep 60 & pid=$!; [ \"$pid\" = " + hostPid + " ] || { echo \"sleep got $pid\";"
          + " exit 97; }; " + quoted(polystack) + "; rc=$?; kill $pid; exit $rc";
      Tools.Output r = Tools.run(180, null, List.of("unshare", "--pid", "--fork",
          "--mount-proc", "bash", "-c", script));
      assertTrue(r.exitCode() != 96 && r.exitCode() != 97, r.stdout() + r.stderr());
      // The sleep never runs: an empty profile, and not one frame of the busy program.
      String text = Files.exists(out) ? Files.readString(out) : "";
      assertFalse(text.contains("hot") || text.contains("cold"),
          "the host's process was recorded as the namespace's: " + text + "\n" + r.stderr());
      assertEquals(0, r.exitCode(), r.stderr());
    } finally {
      busy.destroy();
    }
  }

  private static String quoted(List<String> words) {
    StringBuilder b = new StringBuilder();
    for (String w : words) {
      b.append(b.length() == 0 ? "" : " ").append('\'').append(w.replace("'", "'\\''"))
          .append('\'');
    }
    return b.toString();
  }
}
