package dev.polystack.host.proc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

final class DefaultProcessView implements ProcessView {
  private final Path dir;
  private final int pid;
  private final ProcLimits limits;
  private final ProcFiles.Subject subject;

  DefaultProcessView(Path dir, int pid, ProcLimits limits) {
    this.dir = dir;
    this.pid = pid;
    this.limits = limits;
    this.subject = new ProcFiles.Subject("process " + pid, dir);
  }

  @Override
  public int pid() {
    return pid;
  }

  @Override
  public boolean exists() {
    return Files.isDirectory(dir);
  }

  /**
   * Reads of maps tried before a malformed one is believed: the kernel writes the file in chunks,
   * and a process that maps or unmaps memory between two of them gives lines out of order.
   */
  private static final int MAPS_ATTEMPTS = 5;

  @Override
  public ProcessMaps maps() throws ProcReadException {
    Path file = dir.resolve("maps");
    for (int attempt = 1; ; attempt++) {
      byte[] data =
          ProcFiles.readBounded(file, (int) limits.maxMapsBytes(), MapsParser.WHAT, subject);
      try {
        return new MapsParser(file, limits).parse(data);
      } catch (ProcReadException e) {
        if (e.reason() != ProcReadException.Reason.MALFORMED || attempt == MAPS_ATTEMPTS) {
          throw e;
        }
      }
    }
  }

  @Override
  public AuxVector auxv() throws ProcReadException {
    Path file = dir.resolve("auxv");
    return AuxVector.parse(
        ProcFiles.readBounded(file, limits.maxAuxvBytes(), AuxVector.WHAT, subject), file);
  }

  @Override
  public List<Integer> taskIds() throws ProcReadException {
    Path taskDir = dir.resolve("task");
    String what = "thread list";
    List<Integer> tids = new ArrayList<>();
    // getdents tolerates entries vanishing mid-scan, so an exiting thread is simply missed or
    // listed; readers of per-thread files must cope with it being gone.
    try (DirectoryStream<Path> stream = Files.newDirectoryStream(taskDir)) {
      for (Path entry : stream) {
        String name = entry.getFileName().toString();
        int tid = parseTid(name);
        if (tid <= 0) {
          throw ProcReadException.malformed(what, taskDir, "unexpected entry '" + name + "'");
        }
        if (tids.size() >= limits.maxTasks()) {
          throw new ProcReadException(
              ProcReadException.Reason.TOO_LARGE,
              what,
              taskDir,
              "more than " + limits.maxTasks() + " threads",
              null);
        }
        tids.add(tid);
      }
    } catch (IOException e) {
      throw ProcFiles.translate(e, what, taskDir, subject);
    } catch (DirectoryIteratorException e) {
      throw ProcFiles.translate(e.getCause(), what, taskDir, subject);
    }
    tids.sort(null);
    return List.copyOf(tids);
  }

  @Override
  public TaskStat stat() throws ProcReadException {
    Path file = dir.resolve("stat");
    return TaskStat.parse(
        ProcFiles.readBounded(file, limits.maxSmallFileBytes(), TaskStat.WHAT, subject), file);
  }

  @Override
  public TaskStat taskStat(int tid) throws ProcReadException {
    Path file = taskDir(tid).resolve("stat");
    return TaskStat.parse(
        ProcFiles.readBounded(file, limits.maxSmallFileBytes(), TaskStat.WHAT, taskSubject(tid)),
        file);
  }

  @Override
  public List<TaskStat> taskStats() throws ProcReadException {
    List<TaskStat> result = new ArrayList<>();
    for (int tid : taskIds()) {
      try {
        result.add(taskStat(tid));
      } catch (ProcReadException e) {
        if (e.reason() != ProcReadException.Reason.NO_SUCH_PROCESS) {
          throw e;
        }
        // The thread exited after listing; that is normal. The process exiting is not.
        if (!exists()) {
          throw ProcReadException.noSuchProcess(e.what(), e.file(), subject.description(), e);
        }
      }
    }
    return List.copyOf(result);
  }

  @Override
  public String threadName(int tid) throws ProcReadException {
    Path file = taskDir(tid).resolve("comm");
    byte[] data =
        ProcFiles.readBounded(file, limits.maxSmallFileBytes(), "thread name", taskSubject(tid));
    if (data.length == 0 || data[data.length - 1] != '\n') {
      throw ProcReadException.malformed("thread name", file, "truncated (no trailing newline)");
    }
    return new String(data, 0, data.length - 1, StandardCharsets.UTF_8);
  }

  @Override
  public String exe() throws ProcReadException {
    return ProcFiles.readLink(dir.resolve("exe"), "executable link", subject);
  }

  @Override
  public CommandLine cmdline() throws ProcReadException {
    Path file = dir.resolve("cmdline");
    int max = limits.maxCmdlineBytes();
    return CommandLine.parse(ProcFiles.readUpTo(file, max + 1, "command line", subject), max);
  }

  @Override
  public ProcessStatus status() throws ProcReadException {
    Path file = dir.resolve("status");
    return ProcessStatus.parse(
        ProcFiles.readBounded(file, limits.maxSmallFileBytes(), ProcessStatus.WHAT, subject),
        file);
  }

  @Override
  public ProcessStatus taskStatus(int tid) throws ProcReadException {
    Path file = taskDir(tid).resolve("status");
    return ProcessStatus.parse(
        ProcFiles.readBounded(
            file, limits.maxSmallFileBytes(), ProcessStatus.WHAT, taskSubject(tid)),
        file);
  }

  private Path taskDir(int tid) {
    if (tid <= 0) {
      throw new IllegalArgumentException("tid must be positive: " + tid);
    }
    return dir.resolve("task").resolve(Integer.toString(tid));
  }

  private ProcFiles.Subject taskSubject(int tid) {
    return new ProcFiles.Subject("thread " + tid + " of process " + pid, taskDir(tid));
  }

  /** Strict decimal without sign or leading zeros; returns -1 if not a tid. */
  private static int parseTid(String name) {
    if (name.isEmpty() || name.length() > 10 || name.charAt(0) == '0') {
      return -1;
    }
    long v = 0;
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      v = v * 10 + (c - '0');
    }
    return v > Integer.MAX_VALUE ? -1 : (int) v;
  }

  @Override
  public String toString() {
    return "ProcessView{pid=" + pid + "}";
  }
}
