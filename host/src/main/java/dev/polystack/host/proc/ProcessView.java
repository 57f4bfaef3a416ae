package dev.polystack.host.proc;

import java.util.List;

/**
 * Reads about one process. Nothing is cached: every call reads /proc again, because the target
 * keeps changing (threads come and go, libraries are loaded). Implementations are thread-safe.
 */
public interface ProcessView {

  int pid();

  /** Whether the process directory exists right now. */
  boolean exists();

  ProcessMaps maps() throws ProcReadException;

  AuxVector auxv() throws ProcReadException;

  /** Thread ids, sorted ascending. Threads that exit during the scan may or may not be listed. */
  List<Integer> taskIds() throws ProcReadException;

  /**
   * {@link #taskIds()}, or an empty list when the thread list cannot be read: for callers that
   * treat a process that has exited (or whose /proc is unreadable) as having no threads left.
   */
  default List<Integer> taskIdsOrEmpty() {
    try {
      return taskIds();
    } catch (ProcReadException e) {
      return List.of();
    }
  }

  /** {@code /proc/PID/stat}. */
  TaskStat stat() throws ProcReadException;

  /** {@code /proc/PID/task/TID/stat}. */
  TaskStat taskStat(int tid) throws ProcReadException;

  /**
   * Stat of every thread, sorted by tid. Threads that exit between listing and reading are
   * skipped; if the whole process exits the call fails.
   */
  List<TaskStat> taskStats() throws ProcReadException;

  /** Thread name from {@code /proc/PID/task/TID/comm}, without the trailing newline. */
  String threadName(int tid) throws ProcReadException;

  /**
   * Target of {@code /proc/PID/exe}, kept verbatim, including a {@code " (deleted)"} suffix if
   * the executable was removed after exec.
   */
  String exe() throws ProcReadException;

  CommandLine cmdline() throws ProcReadException;

  ProcessStatus status() throws ProcReadException;

  /** {@code /proc/PID/task/TID/status}; TracerPid is per thread. */
  ProcessStatus taskStatus(int tid) throws ProcReadException;
}
