package dev.polystack.host.testutil;

import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.Syscalls;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The pid-reuse attack of docs/reliability.md: another user's program started at a pid that has
 * just been freed, as a wrapped-around pid counter would hand it out (native/reuse_pid.c sets
 * /proc/sys/kernel/ns_last_pid; root only). The program runs in its own process group, which
 * {@link #close()} kills.
 */
public final class PidReuse implements AutoCloseable {
  /** uid of user nobody: the attacker. */
  public static final int NOBODY = 65534;

  private static Path binary;

  private final Process helper;
  private final int pid;

  private PidReuse(Process helper, int pid) {
    this.helper = helper;
    this.pid = pid;
  }

  /** Starts {@code argv} as {@code uid} at exactly {@code pid}, which must be free (reaped). */
  public static PidReuse start(int pid, int uid, String... argv) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(binary().toString());
    command.add(Integer.toString(pid));
    command.add(Integer.toString(uid));
    command.addAll(List.of(argv));
    // Not the test JVM's stderr: a process left at the pid would hold the build's pipe open.
    Process helper =
        new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    BufferedReader out =
        new BufferedReader(new InputStreamReader(helper.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    if (line == null || !line.equals("pid=" + pid)) {
      helper.waitFor(10, TimeUnit.SECONDS);
      helper.destroyForcibly();
      throw new IllegalStateException("pid " + pid + " could not be reused: " + line);
    }
    return new PidReuse(helper, pid);
  }

  public int pid() {
    return pid;
  }

  @Override
  public void close() throws SyscallException, InterruptedException {
    try {
      Syscalls.kill(-pid, Syscalls.SIGKILL);
    } catch (SyscallException e) {
      // The group is already gone.
    }
    try {
      Syscalls.kill(pid, Syscalls.SIGKILL); // and the process, should it have left the group
    } catch (SyscallException e) {
      // Gone.
    }
    helper.waitFor(10, TimeUnit.SECONDS);
    helper.destroyForcibly();
  }

  private static synchronized Path binary() {
    if (binary == null) {
      try {
        Path dir = Files.createTempDirectory("polystack-reuse");
        Path src = dir.resolve("reuse_pid.c");
        try (InputStream in = PidReuse.class.getResourceAsStream("/native/reuse_pid.c")) {
          Files.copy(in, src, StandardCopyOption.REPLACE_EXISTING);
        }
        Path out = dir.resolve("reuse_pid");
        Process p =
            new ProcessBuilder("gcc", "-O1", "-o", out.toString(), src.toString())
                .inheritIO()
                .start();
        if (p.waitFor() != 0) {
          throw new IllegalStateException("gcc failed for reuse_pid.c");
        }
        binary = out.toRealPath();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    return binary;
  }
}
