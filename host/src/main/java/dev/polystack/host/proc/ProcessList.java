package dev.polystack.host.proc;

import com.google.re2j.Pattern;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * The processes /proc lists at one moment: their parent, owner, start time and comm, and their
 * command line only when a selection needs it, read once. A process that exits while it is read
 * is left out, as pgrep does; kernel threads (no command line, no user memory) never are targets
 * and are left out too. Other users' processes are hostile input: the number of processes and
 * the command line bytes read are capped (docs/operations.md, "Several processes in one
 * record").
 */
public final class ProcessList {

  /**
   * One process.
   *
   * @param pid the process id (tgid)
   * @param ppid its parent's
   * @param uid its real user id
   * @param euid its effective user id
   * @param startTicks its start time (field 22 of /proc/PID/stat), which tells a reused pid
   * @param comm /proc/PID/comm (the kernel's 15-byte name)
   * @param commandLine the arguments joined by spaces, as {@code pgrep -f} matches them, cut at
   *     {@link #MAX_COMMAND_LINE_BYTES}; empty when the scan did not read command lines
   */
  public record Entry(int pid, int ppid, long uid, long euid, long startTicks, String comm,
      String commandLine) {}

  /** Most processes read: a bound on the work of one scan whatever /proc holds. */
  public static final int MAX_PROCESSES = 1 << 16;
  /** Command line bytes read of one process; --match sees no further. */
  public static final int MAX_COMMAND_LINE_BYTES = 128 << 10;
  /** Command line bytes read in one scan, all processes together. */
  public static final long MAX_COMMAND_LINES_BYTES = 32L << 20;

  /**
   * What one read covers.
   *
   * @param commandLines read command lines (only --match needs them)
   * @param uid only processes whose real and effective user id are this one; empty: any
   */
  public record Scan(boolean commandLines, OptionalLong uid) {
    public Scan {
      if (uid.isPresent() && (uid.getAsLong() < 0 || uid.getAsLong() > 0xffffffffL)) {
        throw new IllegalArgumentException("not a user id: " + uid.getAsLong());
      }
    }

    /** The process tree only: pids, parents, owners, names. */
    public static Scan tree() {
      return new Scan(false, OptionalLong.empty());
    }
  }

  /** A scan that would pass one of the limits above; the message names it, in one line. */
  public static final class TooLargeException extends Exception {
    private static final long serialVersionUID = 1L;

    TooLargeException(String message) {
      super(message);
    }
  }

  private final ProcFs proc;
  private final Map<Integer, Entry> byPid;

  private ProcessList(ProcFs proc, Map<Integer, Entry> byPid) {
    this.proc = proc;
    this.byPid = byPid;
  }

  /** The process tree under {@code proc}'s root, without command lines. */
  public static ProcessList read(ProcFs proc) throws TooLargeException {
    return read(proc, Scan.tree());
  }

  /** Reads the processes under {@code proc}'s root that {@code scan} covers. */
  public static ProcessList read(ProcFs proc, Scan scan) throws TooLargeException {
    Map<Integer, Entry> out = new TreeMap<>();
    long commandLineBytes = 0;
    int listed = 0;
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(proc.root())) {
      for (Path dir : dirs) {
        int pid = pidOf(dir.getFileName().toString());
        if (pid <= 0) {
          continue;
        }
        if (++listed > MAX_PROCESSES) {
          throw new TooLargeException("more than " + MAX_PROCESSES + " processes to read (the"
              + " limit of one selection)");
        }
        Optional<Entry> e = read(proc, pid, scan);
        if (e.isEmpty()) {
          continue;
        }
        commandLineBytes += e.get().commandLine().length();
        if (commandLineBytes > MAX_COMMAND_LINES_BYTES) {
          throw new TooLargeException("the command lines to match exceed "
              + (MAX_COMMAND_LINES_BYTES >> 20) + " MiB in all (the limit of one --match, at"
              + " most " + (MAX_COMMAND_LINE_BYTES >> 10) + " KiB of each process); narrow the"
              + " processes read with --user NAME, or select with --comm or --pid");
        }
        out.put(pid, e.get());
      }
    } catch (IOException | RuntimeException e) {
      // /proc itself unreadable: nothing is listed, and the caller says nothing matched.
    }
    return new ProcessList(proc, out);
  }

  private static Optional<Entry> read(ProcFs proc, int pid, Scan scan) {
    try {
      ProcessView view = proc.forPid(pid);
      ProcessStatus status = view.status();
      if (scan.uid().isPresent() && (status.uid().real() != scan.uid().getAsLong()
          || status.uid().effective() != scan.uid().getAsLong())) {
        return Optional.empty();
      }
      // One byte tells a kernel thread or a zombie (no command line) from a process.
      byte[] cmd = commandLine(proc, pid, scan.commandLines() ? MAX_COMMAND_LINE_BYTES : 1);
      if (cmd.length == 0) {
        return Optional.empty();
      }
      long start = view.stat().startTime();
      return Optional.of(new Entry(pid, status.ppid(), status.uid().real(),
          status.uid().effective(), start, status.name(),
          scan.commandLines() ? joined(cmd) : ""));
    } catch (ProcReadException | RuntimeException e) {
      return Optional.empty(); // exited meanwhile
    }
  }

  /** At most {@code max} bytes of /proc/PID/cmdline. */
  private static byte[] commandLine(ProcFs proc, int pid, int max) throws ProcReadException {
    Path dir = proc.root().resolve(Integer.toString(pid));
    return ProcFiles.readUpTo(dir.resolve("cmdline"), max, "command line",
        new ProcFiles.Subject("process " + pid, dir));
  }

  /** The arguments joined by spaces (the NULs between them), without the trailing NUL. */
  private static String joined(byte[] cmd) {
    int length = cmd.length;
    while (length > 0 && cmd[length - 1] == 0) {
      length--;
    }
    byte[] text = new byte[length];
    for (int i = 0; i < length; i++) {
      text[i] = cmd[i] == 0 ? (byte) ' ' : cmd[i];
    }
    return new String(text, StandardCharsets.UTF_8);
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

  /**
   * The processes whose command line {@code pattern} finds (as {@code pgrep -f}), by pid: in
   * time linear in the command lines, whatever the pattern (RE2).
   */
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

  /**
   * {@code roots} and every process descended from one of them, roots first. A root that is not
   * in this list (gone, or another process now has its pid) has no descendants here.
   */
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
      if (parent == null || !namesPolystack(parent.pid())) {
        break;
      }
      out.add(parent.pid());
      e = parent;
    }
    return out;
  }

  private boolean namesPolystack(int pid) {
    try {
      return joined(commandLine(proc, pid, MAX_COMMAND_LINE_BYTES)).contains("polystack");
    } catch (ProcReadException e) {
      return false;
    }
  }
}
