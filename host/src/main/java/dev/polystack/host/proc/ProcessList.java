package dev.polystack.host.proc;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * The processes /proc lists at one moment: their parent, comm and command line, read once. A
 * process that exits while it is read is left out, as pgrep does; kernel threads (no command
 * line, no user memory) never are targets and are left out too.
 */
public final class ProcessList {

  /**
   * One process.
   *
   * @param pid the process id (tgid)
   * @param ppid its parent's
   * @param comm /proc/PID/comm (the kernel's 15-byte name)
   * @param commandLine the arguments joined by spaces, as {@code pgrep -f} matches them
   */
  public record Entry(int pid, int ppid, String comm, String commandLine) {}

  /** Most processes read: a bound on the work of one scan whatever /proc holds. */
  static final int MAX_PROCESSES = 1 << 16;

  private final Map<Integer, Entry> byPid;

  private ProcessList(Map<Integer, Entry> byPid) {
    this.byPid = byPid;
  }

  /** Reads every process under {@code proc}'s root. */
  public static ProcessList read(ProcFs proc) {
    Map<Integer, Entry> out = new TreeMap<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(proc.root())) {
      for (Path dir : dirs) {
        int pid = pidOf(dir.getFileName().toString());
        if (pid <= 0) {
          continue;
        }
        if (out.size() >= MAX_PROCESSES) {
          break;
        }
        read(proc.forPid(pid)).ifPresent(e -> out.put(e.pid(), e));
      }
    } catch (IOException | RuntimeException e) {
      // /proc itself unreadable: nothing is listed, and the caller says nothing matched.
    }
    return new ProcessList(out);
  }

  private static Optional<Entry> read(ProcessView view) {
    try {
      ProcessStatus status = view.status();
      CommandLine cmd = view.cmdline();
      if (cmd.arguments().isEmpty()) {
        return Optional.empty(); // a kernel thread, or a zombie
      }
      return Optional.of(new Entry(view.pid(), status.ppid(), status.name(),
          String.join(" ", cmd.arguments())));
    } catch (ProcReadException | RuntimeException e) {
      return Optional.empty(); // exited meanwhile
    }
  }

  private static int pidOf(String name) {
    if (name.isEmpty() || name.length() > 9) {
      return -1;
    }
    for (int i = 0; i < name.length(); i++) {
      if (name.charAt(i) < '0' || name.charAt(i) > '9') {
        return -1;
      }
    }
    return Integer.parseInt(name);
  }

  public Collection<Entry> entries() {
    return byPid.values();
  }

  public Optional<Entry> get(int pid) {
    return Optional.ofNullable(byPid.get(pid));
  }

  /** The processes whose comm is exactly {@code comm}, by pid. */
  public List<Entry> withComm(String comm) {
    return matching(e -> e.comm().equals(comm));
  }

  /** The processes whose command line {@code pattern} finds (as {@code pgrep -f}), by pid. */
  public List<Entry> withCommandLine(Pattern pattern) {
    return matching(e -> pattern.matcher(e.commandLine()).find());
  }

  private List<Entry> matching(Predicate<Entry> p) {
    List<Entry> out = new ArrayList<>();
    for (Entry e : byPid.values()) {
      if (p.test(e)) {
        out.add(e);
      }
    }
    return out;
  }

  /** {@code roots} and every process descended from one of them, roots first. */
  public Set<Integer> withDescendants(Collection<Integer> roots) {
    Map<Integer, List<Integer>> children = new HashMap<>();
    for (Entry e : byPid.values()) {
      children.computeIfAbsent(e.ppid(), k -> new ArrayList<>()).add(e.pid());
    }
    Set<Integer> out = new LinkedHashSet<>(roots);
    List<Integer> unvisited = new ArrayList<>(roots);
    while (!unvisited.isEmpty()) {
      int pid = unvisited.remove(unvisited.size() - 1);
      for (int child : children.getOrDefault(pid, List.of())) {
        if (out.add(child)) {
          unvisited.add(child);
        }
      }
    }
    return out;
  }

  /**
   * {@code pid} and those of its ancestors whose command line names polystack (sudo, a shell
   * running the launcher): what a name selection must not pick, as pgrep leaves itself out.
   */
  public Set<Integer> selfAndLauncher(int pid) {
    Set<Integer> out = new LinkedHashSet<>();
    out.add(pid);
    Entry e = byPid.get(pid);
    while (e != null && e.ppid() > 1 && out.size() < 64) {
      Entry parent = byPid.get(e.ppid());
      if (parent == null || !parent.commandLine().contains("polystack")) {
        break;
      }
      out.add(parent.pid());
      e = parent;
    }
    return out;
  }
}
