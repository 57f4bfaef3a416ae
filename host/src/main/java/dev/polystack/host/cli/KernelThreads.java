package dev.polystack.host.cli;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Recognises kernel threads (kthreadd, kworker/..., pid 2 and its children): they have no user
 * space, so ptrace refuses them and a profile of them is empty. Told from {@code PF_KTHREAD} in
 * the flags of {@code /proc/PID/stat} (proc(5), field 9), the bit ps(1) uses too.
 */
final class KernelThreads {
  /** include/linux/sched.h. */
  private static final long PF_KTHREAD = 0x00200000L;
  /** A stat line is under 1 KiB; comm may hold anything, so the read is bounded. */
  private static final int MAX_STAT_BYTES = 4096;
  /** Fields after "comm)": state is the first, flags the seventh. */
  private static final int FLAGS_INDEX = 6;

  private KernelThreads() {}

  /**
   * Fails in one line when {@code pid} is a kernel thread; anything else (a user process, one
   * that does not exist or cannot be read) is left to the command's own checks.
   */
  static void refuse(Path proc, int pid, String option) {
    if (isKernelThread(proc, pid)) {
      throw new CommandFailedException(option + " " + pid + ": kernel thread: nothing to profile"
          + " in user space; give the pid of a user-space process");
    }
  }

  static boolean isKernelThread(Path proc, int pid) {
    byte[] data;
    try (InputStream in = Files.newInputStream(proc.resolve(Integer.toString(pid))
        .resolve("stat"))) {
      data = in.readNBytes(MAX_STAT_BYTES);
    } catch (IOException e) {
      return false;
    }
    String text = new String(data, StandardCharsets.UTF_8);
    int close = text.lastIndexOf(')');
    if (close < 0 || close + 2 > text.length()) {
      return false;
    }
    String[] fields = text.substring(close + 2).strip().split(" ");
    if (fields.length <= FLAGS_INDEX) {
      return false;
    }
    try {
      return (Long.parseUnsignedLong(fields[FLAGS_INDEX]) & PF_KTHREAD) != 0;
    } catch (NumberFormatException e) {
      return false;
    }
  }
}
