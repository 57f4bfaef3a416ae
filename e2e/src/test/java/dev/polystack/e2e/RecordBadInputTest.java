package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Bad {@code record} and {@code dump} command lines: exit 2 for bad usage and 1 for a failure at
 * run time, with exactly one "polystack: " line on stderr and no stack trace; a live target
 * named by --pid is left alone, a command after -- is never started, and no output is written.
 */
class RecordBadInputTest {

  @TempDir Path dir;

  @ParameterizedTest(name = "[{index}] {0}")
  @CsvSource(delimiter = '|', value = {
    "record -o {out}"
        + "|2|give either --pid PID (or --comm, --match) or a command after --,"
        + " not both or neither",
    "record --pid {pid} -o {out} -- {cmd}"
        + "|2|give either --pid PID (or --comm, --match) or a command after --,"
        + " not both or neither",
    "record --pid {pid} --rate 0 -o {out}|2|--rate must be 1..10000 Hz, got 0",
    "record --rate 0 -o {out} -- {cmd}|2|--rate must be 1..10000 Hz, got 0",
    "record --pid {pid} --rate abc -o {out}|2|Invalid value for option '--rate': 'abc' is not an int",
    "record --pid {pid} --duration 5x -o {out}"
        + "|2|Invalid value for option '--duration': '5x' is not a duration",
    "record --duration 5x -o {out} -- {cmd}"
        + "|2|Invalid value for option '--duration': '5x' is not a duration",
    "record --pid {pid} --format svg -o {out}|2|--format: unknown output format 'svg'",
    "record --format svg -o {out} -- {cmd}|2|--format: unknown output format 'svg'",
    "record --pid 999999999 -o {out}|1|process 999999999 does not exist",
    "record -o {out} -- /nonexistent/prog|1|cannot run /nonexistent/prog: no such file",
    "record -o {out} -- {notexec}|1|: not an executable file",
    "record -o {out} -- no-such-command-xyz"
        + "|1|cannot run 'no-such-command-xyz': command not found in PATH",
    "record --pid {pid} -f folded -o {dir}|2|: is a directory; give a file name",
    "dump --pid -3|2|--pid -3: a process id is a positive number",
    // Added for issue 8 (hostile input): every flag with a bad value, the target untouched.
    "record --pid {pid} --mode bogus -o {out}|2|--mode bogus: expected bpf, ptrace or perf",
    "record --pid {pid} --duration 0s -o {out}|2|'0s': a duration must be > 0",
    "record --pid {pid} --duration -5s -o {out}|2|'-5s' is not a duration",
    "record --pid {pid} --rate 10001 -o {out}|2|--rate must be 1..10000 Hz, got 10001",
    "record --pid {pid} --max-depth 0 -o {out}|2|--max-depth must be 1..65536, got 0",
    "record --pid 0 -o {out}|2|--pid 0: a process id is a positive number",
    "record --pid abc -o {out}|2|Invalid value for option '--pid' (PID): 'abc' is not an int",
    "record --pid {pid} --tid 1 -o {out}|2|--tid 1: not a thread of process",
    // Issue 29: what a py-spy or perf user types.
    "record --pid {pid} --threads -o {out}|2|--threads: no such option; for py-spy's --threads"
        + " (each stack under its thread) use --per-thread, to keep some threads use --tid TID",
    "record --pid {pid} --threads 1 -o {out}|2|--threads: no such option",
    "record --pid {pid} --tid 999999999 -o {out}|2|--tid 999999999: no such thread",
    "record --tid 999999999 -o {out} -- {cmd}|2|--tid 999999999: no such thread",
    "record --pid {kthread} -o {out}|1|--pid {kthread}: kernel thread: nothing to profile in"
        + " user space; give the pid of a user-space process",
    "top --pid {kthread}|1|--pid {kthread}: kernel thread: nothing to profile in user space",
    "dump --pid {kthread}|1|--pid {kthread}: kernel thread: nothing to profile in user space",
    "vdso --pid {kthread}|1|--pid {kthread}: kernel thread: nothing to profile in user space",
    "record --pid {pid} -o /nonexistent/dir/x.html|2|directory /nonexistent/dir does not exist",
    "record --pid {pid} --plugin-path /nonexistent -o {out}"
        + "|2|--plugin-path /nonexistent: no such directory",
    // Issue 18: an output that cannot be created fails before the target is touched or the
    // command started, with the system's reason (it used to fail after the recording).
    "record --pid {pid} -o /proc/p.html|1|cannot write /proc/p.html: No such file or directory"
        + " (its file system does not create files there); choose another --output",
    "record -o /proc/p.html -- {cmd}|1|cannot write /proc/p.html: No such file or directory",
    "record --pid {pid} -o {out} --stats-json /proc/s.json|1|cannot write /proc/s.json:",
    "dump|2|give one of --pid PID, --comm NAME or --match REGEX",
    "dump --pid {pid} --comm x|2|give one of --pid PID, --comm NAME or --match REGEX",
    "dump --pid 0|2|--pid 0: a process id is a positive number",
  })
  void failsWithOneLineAndLeavesTheTargetAlone(String args, int exitCode, String expected)
      throws Exception {
    Path out = dir.resolve("profile.html");
    Path marker = dir.resolve("command-ran");
    try (Target target = Target.start(Workloads.binary("block_read"))) {
      target.awaitOutput("ready", 10_000);
      List<String> argv = new ArrayList<>();
      String kthread = args.contains("{kthread}") ? Integer.toString(kernelThread()) : "";
      expected = expected.replace("{kthread}", kthread);
      for (String a : args.split(" ")) {
        switch (a) {
          case "{pid}" -> argv.add(Integer.toString(target.pid()));
          case "{kthread}" -> argv.add(kthread);
          case "{out}" -> argv.add(out.toString());
          case "{dir}" -> argv.add(dir.toString());
          // A command that leaves a trace if it is ever run.
          case "{cmd}" -> argv.addAll(List.of("/usr/bin/touch", marker.toString()));
          case "{notexec}" -> argv.add(Files.writeString(dir.resolve("notes.txt"), "x\n")
              .toString());
          default -> argv.add(a);
        }
      }

      var result = Distribution.run(argv.toArray(String[]::new));

      assertEquals(exitCode, result.exitCode(), result.stderr());
      assertEquals(1, result.stderrLines().size(), result.stderr());
      String line = result.stderrLines().get(0);
      assertTrue(line.startsWith("polystack: "), line);
      assertTrue(line.contains(expected), line);
      assertFalse(result.stderr().contains("Exception"), result.stderr());
      assertFalse(result.stderr().contains("\tat "), result.stderr());
      assertEquals("", result.stdout());
      assertFalse(Files.exists(out), "wrote " + out + " although the command failed");
      assertFalse(Files.exists(marker), "started the command although the command line is bad");

      RecordAttachTest.assertReleasedAndRunning(target);
      target.stdin().write("x".getBytes(StandardCharsets.UTF_8));
      target.stdin().close();
      assertEquals(0, target.awaitExit(10), target.output());
      assertTrue(target.output().contains("done 1"), target.output());
    }
  }

  /**
   * A kernel thread's pid: PF_KTHREAD (0x00200000) in the flags of /proc/PID/stat, as ps(1)
   * tells them. kthreadd is pid 2 where the host's pid namespace is visible.
   */
  private static int kernelThread() throws IOException {
    try (var entries = Files.list(Path.of("/proc"))) {
      for (Path p : entries.filter(e -> e.getFileName().toString().matches("[0-9]+"))
          .sorted(java.util.Comparator.comparingInt(
              (Path e) -> Integer.parseInt(e.getFileName().toString()))).toList()) {
        try {
          String stat = Files.readString(p.resolve("stat"));
          String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          if ((Long.parseLong(fields[6]) & 0x00200000L) != 0) {
            return Integer.parseInt(p.getFileName().toString());
          }
        } catch (IOException e) {
          // gone meanwhile
        }
      }
    }
    Assumptions.abort("no kernel thread is visible in this pid namespace (a container)");
    return -1;
  }
}
