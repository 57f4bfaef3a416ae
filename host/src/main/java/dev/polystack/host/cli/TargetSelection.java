package dev.polystack.host.cli;

import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessList;
import dev.polystack.host.session.MultiRecord;
import dev.polystack.host.session.RecordSession;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import picocli.CommandLine.Option;

/**
 * The options that choose processes by name and follow what they start: {@code --comm}
 * (exact, as {@code pgrep -x}), {@code --match} (an RE2 regular expression over the command
 * line, as {@code pgrep -f}) and {@code --subprocesses} (py-spy's name), all narrowed to one
 * user's processes by {@code --user} ({@link LaunchOptions}). Names resolve once, at start.
 */
final class TargetSelection {

  @Option(names = "--comm", paramLabel = "NAME",
      description = "Attach to every process whose name (/proc/PID/comm, at most 15"
          + " characters) is exactly NAME; repeatable. polystack itself is never selected.")
  List<String> comms = new ArrayList<>();

  @Option(names = "--match", paramLabel = "REGEX",
      description = "Attach to every process whose command line (arguments joined by spaces)"
          + " contains a match of REGEX (RE2 syntax), as pgrep -f; polystack itself is never"
          + " selected.")
  String match;

  @Option(names = "--subprocesses",
      description = "Also record the processes the targets start during the run, from their"
          + " fork (bpf and perf modes).")
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
          + e.getDescription() + "; RE2 syntax, without backreferences or lookaround)");
    }
  }

  /**
   * The processes to attach to: {@code pids} and those the names select (of user {@code uid}
   * when given), in pid order, without polystack and its launcher. Says what was selected in one
   * line; fails (exit 1) in one line when a name selects nothing or too much.
   */
  List<Integer> resolve(ProcFs proc, List<Integer> pids, OptionalLong uid, Console console,
      boolean ptrace) {
    if (!byName()) {
      return List.copyOf(new java.util.LinkedHashSet<>(pids));
    }
    Map<Integer, String> chosen = new LinkedHashMap<>();
    for (int pid : pids) {
      chosen.put(pid, commOf(proc, pid));
    }
    byName(proc, comms, match, uid).forEach(chosen::putIfAbsent);
    if (chosen.size() == pids.size()) {
      throw noMatch(comms, match, uid);
    }
    if (ptrace && chosen.size() > MultiRecord.MAX_PROCESSES) {
      throw new CommandFailedException(chosen.size() + " processes match "
          + asked(comms, match, uid) + ", more than the " + MultiRecord.MAX_PROCESSES
          + " one ptrace-mode record takes; use --mode bpf or perf, or narrow the selection"
          + " (--user NAME, a longer --match)");
    }
    console.note("selected " + (chosen.size() == 1 ? "process " : chosen.size() + " processes: ")
        + describe(chosen));
    return List.copyOf(chosen.keySet());
  }

  private static String commOf(ProcFs proc, int pid) {
    try {
      return proc.forPid(pid).status().name();
    } catch (ProcReadException | RuntimeException e) {
      return "?";
    }
  }

  /**
   * The processes {@code comms} and {@code match} select (pid to comm, by pid), of user
   * {@code uid} when given, without polystack and its launcher. Command lines are read only for
   * {@code match}, within {@link ProcessList}'s limits; passing one is a failure in one line.
   */
  static Map<Integer, String> byName(ProcFs proc, List<String> comms, String match,
      OptionalLong uid) {
    ProcessList list;
    try {
      list = ProcessList.read(proc, new ProcessList.Scan(match != null, uid));
    } catch (ProcessList.TooLargeException e) {
      throw new CommandFailedException("cannot select " + asked(comms, match, uid) + ": "
          + e.getMessage());
    }
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
  static CommandFailedException noMatch(List<String> comms, String match, OptionalLong uid) {
    return new CommandFailedException("no process matches " + asked(comms, match, uid)
        + " (polystack itself excluded); list candidates with: ps -eo pid,user,comm,args");
  }

  /** {@code --comm a or --match b}: the selection as the user wrote it. */
  static String asked(List<String> comms, String match, OptionalLong uid) {
    List<String> asked = new ArrayList<>();
    comms.forEach(c -> asked.add("--comm " + c));
    if (match != null) {
      asked.add("--match " + match);
    }
    return String.join(" or ", asked)
        + (uid.isPresent() ? " of user id " + uid.getAsLong() : "");
  }

  /** {@code 4242 (nginx), 4243 (nginx)}. */
  static String describe(Map<Integer, String> chosen) {
    StringBuilder line = new StringBuilder();
    chosen.forEach((pid, comm) -> line.append(line.length() == 0 ? "" : ", ").append(pid)
        .append(" (").append(comm).append(')'));
    return line.toString();
  }
}
