package dev.polystack.host.launch;

import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.SyscallException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeoutException;

/**
 * util-linux's {@code setpriv}: sets a child's ids, groups and parent-death signal before it
 * execs the command, which posix_spawn cannot. Looked up in the system directories only, never
 * through PATH: polystack runs as root and must not run whatever a PATH entry offers.
 */
final class SetPriv {
  static final String PDEATHSIG = "--pdeathsig=KILL";
  private static final List<String> DIRECTORIES = List.of("/usr/bin", "/bin", "/usr/sbin",
      "/sbin");

  private final Path path;
  private final boolean pdeathsig;

  private SetPriv(Path path, boolean pdeathsig) {
    this.path = path;
    this.pdeathsig = pdeathsig;
  }

  private static final class Holder {
    static final Optional<SetPriv> INSTALLED = find();
  }

  /** The installed setpriv, probed once; empty when there is none. */
  static Optional<SetPriv> installed() {
    return Holder.INSTALLED;
  }

  private static Optional<SetPriv> find() {
    for (String dir : DIRECTORIES) {
      Path p = Path.of(dir, "setpriv");
      if (Files.isRegularFile(p) && Files.isExecutable(p)) {
        return Optional.of(new SetPriv(p, acceptsPdeathsig(p)));
      }
    }
    return Optional.empty();
  }

  /** util-linux 2.33 added --pdeathsig; older ones refuse the option and exit non-zero. */
  private static boolean acceptsPdeathsig(Path setpriv) {
    try (ChildProcess probe = Launcher.command(setpriv.toString(), PDEATHSIG, "--", "/bin/true")
        .stdout(Path.of("/dev/null")).stderr(Path.of("/dev/null")).start()) {
      WaitStatus st = probe.waitFor(Duration.ofSeconds(5));
      return st.exited() && st.exitCode() == 0;
    } catch (SyscallException | TimeoutException e) {
      return false;
    }
  }

  /**
   * The arguments that run what follows with {@code as} (if not null) and the death signal;
   * empty when there is nothing to set.
   */
  List<String> prefix(Credentials as, boolean killedWithPolystack) {
    if (as == null && !(killedWithPolystack && pdeathsig)) {
      return List.of();
    }
    List<String> out = new ArrayList<>(List.of(path.toString()));
    if (as != null) {
      out.add("--reuid=" + as.uid());
      out.add("--regid=" + as.gid());
      // initgroups(3) needs the password entry; a bare uid gets no supplementary groups.
      out.add(as.user().isEmpty() ? "--clear-groups" : "--init-groups");
    }
    if (killedWithPolystack && pdeathsig) {
      out.add(PDEATHSIG);
    }
    out.add("--");
    return out;
  }
}
