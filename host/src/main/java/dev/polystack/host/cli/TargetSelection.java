package dev.polystack.host.cli;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessList;
import dev.polystack.host.session.MultiRecord;
import dev.polystack.host.session.RecordSession;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import picocli.CommandLine.Option;

/**
 * The options that choose processes by name and follow what they start: {@code --comm}
 * (exact, as {@code pgrep -x}), {@code --match} (a regular expression over the command line, as
 * {@code pgrep -f}) and {@code --subprocesses} (py-spy's name). Names resolve once, at start.
 */
final class TargetSelection {

  @Option(names = "--comm", paramLabel = "NAME",
      description = "Attach to every process whose name (/proc/PID/comm, at most 15"
          + " characters) is exactly NAME; repeatable. polystack itself is never selected.")
  List<String> comms = new ArrayList<>();

  @Option(names = "--match", paramLabel = "REGEX",
      description = "Attach to every process whose command line (arguments joined by spaces)"
          + " contains a match of REGEX, as pgrep -f; polystack itself is never selected.")
  String match;

  @Option(names = "--subprocesses",
      description = "Also record the processes the targets start during the run (found in"
          + " /proc every 100 ms; bpf and perf modes).")
  boolean subprocesses;

  boolean byName() {
    return !comms.isEmpty() || match != null;
  }

  boolean subprocesses() {
    return subprocesses;
  }

  /** The usage errors of these options with the rest of the command line. */
  void check(RecordSession.Mode mode, boolean attaching, int pids, List<Integer> tids) {
    if (subprocesses && mode == RecordSession.Mode.PTRACE) {
      throw new UsageException("--subprocesses cannot be used with --mode ptrace: use --mode"
          + " bpf or --mode perf (both follow new processes without stopping them)");
    }
    boolean several = subprocesses || byName() || pids > 1;
    if (several && !tids.isEmpty()) {
      throw new UsageException("--tid selects threads of one process: give a single --pid"
          + " without --comm, --match or --subprocesses");
    }
    checkMatch(match);
  }

  /** A {@code --match} that is not a regular expression is a usage error; null passes. */
  static void checkMatch(String match) {
    if (match == null) {
      return;
    }
    try {
      Pattern.compile(match);
    } catch (PatternSyntaxException e) {
      throw new UsageException("--match " + match + ": not a regular expression ("
          + e.getDescription() + ")");
    }
  }

  /**
   * The processes to attach to: {@code pids} and those the names select, in pid order, without
   * polystack and its launcher. Says what was selected in one line; fails (exit 1) in one line
   * when a name selects nothing.
   */
  List<Integer> resolve(ProcFs proc, List<Integer> pids, Console console) {
    if (!byName()) {
      return List.copyOf(new java.util.LinkedHashSet<>(pids));
    }
    ProcessList list = ProcessList.read(proc);
    Map<Integer, String> chosen = new LinkedHashMap<>();
    for (int pid : pids) {
      chosen.put(pid, list.get(pid).map(ProcessList.Entry::comm).orElse("?"));
    }
    byName(list, comms, match).forEach(chosen::putIfAbsent);
    if (chosen.size() == pids.size()) {
      throw noMatch(comms, match);
    }
    if (chosen.size() > MultiRecord.MAX_PROCESSES) {
      throw new CommandFailedException(chosen.size() + " processes match "
          + asked(comms, match) + ", more than the " + MultiRecord.MAX_PROCESSES
          + " one record takes; narrow the selection");
    }
    console.note("selected " + (chosen.size() == 1 ? "process " : chosen.size() + " processes: ")
        + describe(chosen));
    return List.copyOf(chosen.keySet());
  }

  /**
   * The processes {@code comms} and {@code match} select (pid to comm, by pid), without
   * polystack and its launcher.
   */
  static Map<Integer, String> byName(ProcessList list, List<String> comms, String match) {
    Set<Integer> self = list.selfAndLauncher((int) ProcessHandle.current().pid());
    Map<Integer, String> chosen = new java.util.TreeMap<>();
    for (String comm : comms) {
      for (ProcessList.Entry e : list.withComm(comm)) {
        if (!self.contains(e.pid())) {
          chosen.putIfAbsent(e.pid(), e.comm());
        }
      }
    }
    if (match != null) {
      for (ProcessList.Entry e : list.withCommandLine(Pattern.compile(match))) {
        if (!self.contains(e.pid())) {
          chosen.putIfAbsent(e.pid(), e.comm());
        }
      }
    }
    return chosen;
  }

  /** The one line (exit 1) for a selection of nothing. */
  static CommandFailedException noMatch(List<String> comms, String match) {
    return new CommandFailedException("no process matches " + asked(comms, match)
        + " (polystack itself excluded); list candidates with: ps -eo pid,comm,args");
  }

  /** {@code --comm a or --match b}: the selection as the user wrote it. */
  static String asked(List<String> comms, String match) {
    List<String> asked = new ArrayList<>();
    comms.forEach(c -> asked.add("--comm " + c));
    if (match != null) {
      asked.add("--match " + match);
    }
    return String.join(" or ", asked);
  }

  /** {@code 4242 (nginx), 4243 (nginx)}. */
  static String describe(Map<Integer, String> chosen) {
    StringBuilder line = new StringBuilder();
    chosen.forEach((pid, comm) -> line.append(line.length() == 0 ? "" : ", ").append(pid)
        .append(" (").append(comm).append(')'));
    return line.toString();
  }
}
