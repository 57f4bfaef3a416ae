package dev.polystack.host.cli;

import dev.polystack.host.launch.Accounts;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessList;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import picocli.CommandLine.Option;

/**
 * The options of the commands that stop every thread of a process once (dump, snapshot): which
 * process (by pid, or by a name that must select exactly one) and how deep to walk, validated
 * the same way for both.
 */
final class StoppedTarget {
  private static final Path PROC = Path.of("/proc");

  @Option(names = {"--pid", "-p"}, paramLabel = "PID", description = "The process.")
  Integer pid;

  @Option(names = "--comm", paramLabel = "NAME",
      description = "The one process whose name (/proc/PID/comm) is exactly NAME.")
  String comm;

  @Option(names = "--match", paramLabel = "REGEX",
      description = "The one process whose command line contains a match of REGEX (pgrep -f).")
  String match;

  @Option(names = "--user", paramLabel = "USER",
      description = "With --comm or --match: only this user's processes (name or uid).")
  String user;

  @Option(names = "--max-depth", paramLabel = "N", defaultValue = "512",
      description = "Frames per stack (default: ${DEFAULT-VALUE}).")
  int maxDepth;

  /** Rejects a selection or depth that cannot be right, as a usage error. */
  void validate() {
    int given = (pid != null ? 1 : 0) + (comm != null ? 1 : 0) + (match != null ? 1 : 0);
    if (given != 1) {
      throw new UsageException("give one of --pid PID, --comm NAME or --match REGEX");
    }
    if (pid != null && pid <= 0) {
      throw new UsageException("--pid " + pid + ": a process id is a positive number");
    }
    TargetSelection.checkMatch(match);
    if (user != null && pid != null) {
      throw new UsageException("--user applies to --comm and --match, not to --pid");
    }
    uid();
    if (maxDepth < 1 || maxDepth > 65_536) {
      throw new UsageException("--max-depth must be 1..65536, got " + maxDepth);
    }
  }

  /**
   * The process: --pid, or the one a name selects (said in one line). Nothing selected is a
   * failure (exit 1); several is the command line's mistake (exit 2): these commands stop one
   * process at a time.
   */
  int resolve(ProcFs proc, Console console) {
    if (pid != null) {
      KernelThreads.refuse(PROC, pid, "--pid");
      return pid;
    }
    List<String> comms = comm == null ? List.of() : List.of(comm);
    OptionalLong uid = uid();
    Map<Integer, String> chosen = TargetSelection.byName(proc, comms, match, uid);
    if (chosen.isEmpty()) {
      throw TargetSelection.noMatch(comms, match, uid);
    }
    if (chosen.size() > 1) {
      throw new UsageException(TargetSelection.asked(comms, match, uid) + " selects "
          + chosen.size() + " processes (" + TargetSelection.describe(chosen) + "); this"
          + " command takes one: give --pid");
    }
    console.note("selected process " + TargetSelection.describe(chosen));
    int selected = chosen.keySet().iterator().next();
    KernelThreads.refuse(PROC, selected, "process");
    return selected;
  }

  /** The user --user names; empty without it. */
  private OptionalLong uid() {
    if (user == null) {
      return OptionalLong.empty();
    }
    if (!user.isEmpty() && user.length() <= 10 && user.chars().allMatch(Character::isDigit)
        && Long.parseLong(user) <= 0xffffffffL) {
      return OptionalLong.of(Long.parseLong(user));
    }
    return OptionalLong.of(Accounts.userByName(user).orElseThrow(() -> new UsageException(
        "--user " + user + ": no such user")).uid());
  }
}
