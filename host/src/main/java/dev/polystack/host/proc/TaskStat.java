package dev.polystack.host.proc;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Selected fields of {@code /proc/PID/stat} or {@code /proc/PID/task/TID/stat}. Times are in clock
 * ticks (see AT_CLKTCK, normally 100 per second); {@code startTime} is ticks after boot.
 *
 * @param pid the process id for process stat, the thread id for task stat
 * @param comm the command name, which may contain any character including spaces and ')'
 * @param processor CPU the task last ran on
 */
public record TaskStat(
    int pid,
    String comm,
    ThreadState state,
    int ppid,
    int processGroup,
    int session,
    long minorFaults,
    long majorFaults,
    long utime,
    long stime,
    long priority,
    long nice,
    long numThreads,
    long startTime,
    long virtualSize,
    long rssPages,
    int processor) {

  static final String WHAT = "stat";
  // Fields after comm, counting state as the first; processor is field 39 of the whole line.
  private static final int MIN_FIELDS_AFTER_COMM = 37;
  // Kernel threads' comm can be up to 64 bytes on recent kernels; leave room.
  private static final int MAX_COMM_BYTES = 256;

  public TaskStat {
    Objects.requireNonNull(comm, "comm");
    Objects.requireNonNull(state, "state");
    if (pid <= 0) {
      throw new IllegalArgumentException("pid must be positive: " + pid);
    }
  }

  static TaskStat parse(byte[] data, Path file) throws ProcReadException {
    String text = new String(data, StandardCharsets.UTF_8);
    if (text.isEmpty()) {
      throw ProcReadException.malformed(WHAT, file, "empty");
    }
    if (!text.endsWith("\n")) {
      throw ProcReadException.malformed(WHAT, file, "truncated (no trailing newline)");
    }
    text = text.substring(0, text.length() - 1);
    int open = text.indexOf(" (");
    // comm may itself contain ')', so the real delimiter is the last one.
    int close = text.lastIndexOf(')');
    if (open <= 0 || close < open + 1) {
      throw ProcReadException.malformed(WHAT, file, "no '(comm)' field");
    }
    String comm = text.substring(open + 2, close);
    if (comm.getBytes(StandardCharsets.UTF_8).length > MAX_COMM_BYTES) {
      throw ProcReadException.malformed(WHAT, file, "comm longer than " + MAX_COMM_BYTES);
    }
    if (close + 2 > text.length() || text.charAt(close + 1) != ' ') {
      throw ProcReadException.malformed(WHAT, file, "nothing after comm");
    }
    String[] f = text.substring(close + 2).split(" ", -1);
    if (f.length < MIN_FIELDS_AFTER_COMM) {
      throw ProcReadException.malformed(
          WHAT, file, "expected at least " + MIN_FIELDS_AFTER_COMM + " fields after comm, got "
              + f.length);
    }
    Fields fields = new Fields(f, file);
    if (f[0].length() != 1) {
      throw ProcReadException.malformed(WHAT, file, "bad state '" + f[0] + "'");
    }
    ThreadState state =
        ThreadState.fromCode(f[0].charAt(0))
            .orElseThrow(
                () -> ProcReadException.malformed(WHAT, file, "unknown state '" + f[0] + "'"));
    int pid = fields.intField(text.substring(0, open), "pid");
    if (pid <= 0) {
      throw ProcReadException.malformed(WHAT, file, "pid must be positive");
    }
    return new TaskStat(
        pid,
        comm,
        state,
        fields.intAt(1, "ppid"),
        fields.intAt(2, "pgrp"),
        fields.intAt(3, "session"),
        fields.unsignedAt(7, "minflt"),
        fields.unsignedAt(9, "majflt"),
        fields.unsignedAt(11, "utime"),
        fields.unsignedAt(12, "stime"),
        fields.signedAt(15, "priority"),
        fields.signedAt(16, "nice"),
        fields.signedAt(17, "num_threads"),
        fields.unsignedAt(19, "starttime"),
        fields.unsignedAt(20, "vsize"),
        fields.signedAt(21, "rss"),
        fields.intAt(36, "processor"));
  }

  /** Field access with format errors reported as {@link ProcReadException}. */
  private record Fields(String[] values, Path file) {
    int intAt(int index, String name) throws ProcReadException {
      return intField(values[index], name);
    }

    int intField(String value, String name) throws ProcReadException {
      long v = signedAt(value, name);
      if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
        throw ProcReadException.malformed(WHAT, file, name + " out of range: " + value);
      }
      return (int) v;
    }

    long signedAt(int index, String name) throws ProcReadException {
      return signedAt(values[index], name);
    }

    long signedAt(String value, String name) throws ProcReadException {
      if (value.isEmpty() || value.length() > 20 || value.charAt(0) == '+') {
        throw ProcReadException.malformed(WHAT, file, "bad " + name + " '" + value + "'");
      }
      try {
        return Long.parseLong(value);
      } catch (NumberFormatException e) {
        throw ProcReadException.malformed(WHAT, file, "bad " + name + " '" + value + "'");
      }
    }

    /** Kernel u64 counters; values above 2^63 are rejected as nonsensical. */
    long unsignedAt(int index, String name) throws ProcReadException {
      long v = signedAt(index, name);
      if (v < 0) {
        throw ProcReadException.malformed(WHAT, file, "bad " + name + " '" + values[index] + "'");
      }
      return v;
    }
  }
}
