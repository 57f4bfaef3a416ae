package dev.polystack.host.sys;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * Opens that survive the descriptor limit being reached by files nobody uses any more.
 *
 * <p>A parsed ELF file keeps its descriptor while anything refers to it (a process's module, the
 * opener's cache) and the JDK closes it only once the file is collected. With a limit of 1024,
 * opening a few hundred modules can run out of descriptors while most of them are garbage. On
 * EMFILE or ENFILE an open here collects and retries, as the JDK does for direct memory.
 */
public final class DescriptorLimit {
  /** Waits between retries, for the cleaner thread to close what the collection found. */
  private static final long[] BACKOFF_MILLIS = {0, 10, 50, 200};

  /**
   * Loaded with this class: loading a class can need a descriptor too, and the check runs just
   * when there is none.
   */
  private static final Class<?> CHECKED = SyscallException.class;

  private DescriptorLimit() {}

  /** An open that may fail with {@code E}. */
  @FunctionalInterface
  public interface Open<T, E extends Exception> {
    T open() throws E;
  }

  /**
   * Runs {@code open}; when it fails because the process or system ran out of descriptors,
   * collects garbage and tries again, a few times, before the last failure is thrown.
   */
  public static <T, E extends Exception> T open(Open<T, E> open) throws E {
    for (int attempt = 0; ; attempt++) {
      try {
        return open.open();
      } catch (Exception e) {
        if (!outOfDescriptors(e) || attempt == BACKOFF_MILLIS.length) {
          throw e;
        }
      }
      System.gc();
      if (!pause(BACKOFF_MILLIS[attempt])) {
        return open.open(); // interrupted: one last try, then the caller sees its failure
      }
    }
  }

  /**
   * This process's soft limit on open descriptors (RLIMIT_NOFILE, as /proc/self/limits shows
   * it), or empty when unlimited or unreadable.
   */
  public static OptionalLong softLimit() {
    try {
      return softLimit(Files.readString(Path.of("/proc/self/limits")));
    } catch (IOException e) {
      return OptionalLong.empty();
    }
  }

  /** The soft "Max open files" of a /proc/PID/limits text. */
  static OptionalLong softLimit(String limits) {
    for (String line : limits.split("\n")) {
      if (line.startsWith("Max open files")) {
        String[] fields = line.substring("Max open files".length()).trim().split("\\s+");
        if (fields.length > 0 && fields[0].matches("[0-9]{1,18}")) {
          return OptionalLong.of(Long.parseLong(fields[0]));
        }
        return OptionalLong.empty();
      }
    }
    return OptionalLong.empty();
  }

  /** True for EMFILE or ENFILE, from a system call or from the JDK's file system layer. */
  static boolean outOfDescriptors(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SyscallException s
          && (s.errno() == Errno.EMFILE || s.errno() == Errno.ENFILE)) {
        return true;
      }
      if (t instanceof FileSystemException f && f.getReason() != null
          && (f.getReason().equals("Too many open files")
              || f.getReason().equals("Too many open files in system"))) {
        return true;
      }
    }
    return false;
  }

  private static boolean pause(long millis) {
    if (millis == 0) {
      return true;
    }
    try {
      Thread.sleep(millis);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
