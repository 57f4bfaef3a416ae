package dev.polystack.host.launch;

import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.LibC;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.SyscallException.Area;
import dev.polystack.host.sys.Syscalls;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import jnr.ffi.Pointer;

/**
 * Starts processes with {@code posix_spawnp}. Not {@link ProcessBuilder}: the JVM's reaper thread
 * waitpid()s on its children, and any thread of our process waiting on a tracee can swallow ptrace
 * stop reports meant for the {@code Tracer}.
 *
 * <p>Stdin, stdout and stderr are inherited unless redirected to files. The signal mask is
 * cleared and all catchable signals reset to default in the child, so JVM signal setup does not
 * leak into the target.
 *
 * <p><b>Starting stopped.</b> With {@link #startStopped} the command runs as {@code /bin/sh -c
 * 'kill -STOP $$; exec "$0" "$@"' argv...}: the shell stops itself before exec, and {@link
 * #start()} returns only after observing that stop (waitpid WUNTRACED), so there is no race with
 * exec. A tracer then seizes the stopped shell and resumes it with SIGCONT; see {@link
 * ChildProcess#seizeAndRunToExec}.
 *
 * <p><b>Environment.</b> The child gets polystack's environment minus what is polystack's own or
 * a credential: {@code POLYSTACK_*} and every {@code OTEL_EXPORTER_OTLP_*HEADERS*} variable
 * (docs/operations.md, "Launched commands").
 *
 * <p><b>Another user, and dying with polystack.</b> {@link #runAs} and {@link
 * #killedWithPolystack} start the command through {@code setpriv} (util-linux), which sets the
 * ids and groups, then the parent-death signal (after the id change, which would clear it), and
 * execs the rest: posix_spawn can do neither.
 */
public final class Launcher {
  private static final String STOP_THEN_EXEC = "kill -STOP $$; exec \"$0\" \"$@\"";
  private static final int O_RDONLY = 0;
  private static final int O_WRONLY_CREAT_TRUNC = 0x1 | 0x40 | 0x200;
  private static final short POSIX_SPAWN_SETSIGDEF = 0x4;
  private static final short POSIX_SPAWN_SETSIGMASK = 0x8;
  private static final int WUNTRACED = 2;

  private final List<String> argv;
  private Path stdin;
  private Path stdout;
  private Path stderr;
  private boolean startStopped;
  private Credentials credentials;
  private boolean killedWithPolystack;

  private Launcher(List<String> argv) {
    if (argv.isEmpty()) {
      throw new IllegalArgumentException("empty command");
    }
    argv.forEach(a -> Objects.requireNonNull(a, "argument"));
    this.argv = List.copyOf(argv);
  }

  public static Launcher command(String... argv) {
    return new Launcher(List.of(argv));
  }

  public static Launcher command(List<String> argv) {
    return new Launcher(argv);
  }

  public Launcher stdin(Path file) {
    this.stdin = file;
    return this;
  }

  public Launcher stdout(Path file) {
    this.stdout = file;
    return this;
  }

  public Launcher stderr(Path file) {
    this.stderr = file;
    return this;
  }

  public Launcher startStopped(boolean stopped) {
    this.startStopped = stopped;
    return this;
  }

  /** Whether {@link #runAs} can work here: setpriv (util-linux) is installed. */
  public static boolean canRunAs() {
    return SetPriv.installed().isPresent();
  }

  /** Runs the command with these user and group ids instead of polystack's (needs root). */
  public Launcher runAs(Credentials as) {
    this.credentials = Objects.requireNonNull(as, "credentials");
    return this;
  }

  /**
   * The child gets SIGKILL if polystack dies (PR_SET_PDEATHSIG), so a launched command never
   * outlives a polystack killed by SIGKILL or the OOM killer. The kernel sends it when the
   * <em>thread</em> that started the child ends: call {@link #start} from a thread that lives
   * until the child is ended (a command's main thread). setpriv arms it just before it execs the
   * command: a plain {@link #start} may return a moment earlier, a {@link #startStopped} one
   * returns after. Cleared by the kernel when the command
   * execs a set-user-ID or file-capability program; skipped where setpriv lacks
   * {@code --pdeathsig} (util-linux before 2.33).
   */
  public Launcher killedWithPolystack() {
    this.killedWithPolystack = true;
    return this;
  }

  /**
   * The environment a launched command gets: {@code env} without polystack's own variables and
   * OTLP credentials; with {@code as}, HOME, USER and LOGNAME of that user (when it has a
   * password entry), as {@code sudo -u} sets them.
   */
  static Map<String, String> environment(Map<String, String> env, Credentials as) {
    Map<String, String> out = new LinkedHashMap<>();
    env.forEach((k, v) -> {
      if (!withheld(k)) {
        out.put(k, v);
      }
    });
    if (as != null && !as.user().isEmpty()) {
      out.put("USER", as.user());
      out.put("LOGNAME", as.user());
      if (!as.home().isEmpty()) {
        out.put("HOME", as.home());
      }
    }
    return out;
  }

  /** polystack's own settings and the OTLP headers (where bearer tokens and API keys go). */
  static boolean withheld(String name) {
    return name.startsWith("POLYSTACK_")
        || name.startsWith("OTEL_EXPORTER_OTLP_") && name.contains("HEADERS");
  }

  public ChildProcess start() throws SyscallException {
    LibC c = Native.libc();
    List<String> args = argv;
    List<String> prefix = setprivPrefix();
    if (startStopped) {
      // With a parent-death signal, a shell whose parent is already gone (polystack died
      // before setpriv armed it) must not run the command at all.
      String script = prefix.contains(SetPriv.PDEATHSIG)
          ? "[ \"$PPID\" = " + ProcessHandle.current().pid() + " ] || exit 125; " + STOP_THEN_EXEC
          : STOP_THEN_EXEC;
      args = new ArrayList<>(List.of("/bin/sh", "-c", script));
      args.addAll(argv);
    }
    if (!prefix.isEmpty()) {
      List<String> wrapped = new ArrayList<>(prefix);
      wrapped.addAll(args);
      args = wrapped;
    }
    List<String> env = new ArrayList<>();
    for (Map.Entry<String, String> e : environment(System.getenv(), credentials).entrySet()) {
      env.add(e.getKey() + "=" + e.getValue());
    }
    CStrings cargv = new CStrings(args);
    CStrings cenv = new CStrings(env);
    // Opaque glibc structs (80 and 336 bytes on x86-64); over-allocate for safety.
    Pointer actions = Native.allocate(256);
    Pointer attr = Native.allocate(512);
    Pointer sigset = Native.allocate(128);
    Syscalls.checkReturned(c.posix_spawn_file_actions_init(actions), "posix_spawn_file_actions_init", Area.SPAWN);
    Syscalls.checkReturned(c.posix_spawnattr_init(attr), "posix_spawnattr_init", Area.SPAWN);
    try {
      redirect(c, actions, 0, stdin, O_RDONLY);
      redirect(c, actions, 1, stdout, O_WRONLY_CREAT_TRUNC);
      redirect(c, actions, 2, stderr, O_WRONLY_CREAT_TRUNC);
      c.sigemptyset(sigset);
      Syscalls.checkReturned(c.posix_spawnattr_setsigmask(attr, sigset), "posix_spawnattr_setsigmask", Area.SPAWN);
      for (int sig = 1; sig < 32; sig++) {
        if (sig != Syscalls.SIGKILL && sig != Syscalls.SIGSTOP) {
          c.sigaddset(sigset, sig);
        }
      }
      Syscalls.checkReturned(c.posix_spawnattr_setsigdefault(attr, sigset), "posix_spawnattr_setsigdefault", Area.SPAWN);
      Syscalls.checkReturned(
          c.posix_spawnattr_setflags(attr, (short) (POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)),
          "posix_spawnattr_setflags", Area.SPAWN);
      int[] pid = new int[1];
      int rc = c.posix_spawnp(pid, args.get(0), actions, attr, cargv.pointer(), cenv.pointer());
      Syscalls.checkReturned(rc, "posix_spawnp(" + args.get(0) + ")", Area.SPAWN);
      ChildProcess child = new ChildProcess(pid[0], startStopped);
      if (startStopped) {
        awaitSelfStop(child);
      }
      return child;
    } finally {
      c.posix_spawn_file_actions_destroy(actions);
      c.posix_spawnattr_destroy(attr);
    }
  }

  /** {@code setpriv OPTIONS --} when the child needs other ids or a parent-death signal. */
  private List<String> setprivPrefix() throws SyscallException {
    if (credentials == null && !killedWithPolystack) {
      return List.of();
    }
    Optional<SetPriv> setpriv = SetPriv.installed();
    if (setpriv.isEmpty()) {
      if (credentials != null) {
        throw new SyscallException("setpriv (util-linux), needed to run " + argv.get(0) + " as "
            + credentials.describe() + ",", dev.polystack.host.sys.Errno.ENOENT, Area.SPAWN);
      }
      return List.of(); // no parent-death signal here (docs/operations.md)
    }
    return setpriv.get().prefix(credentials, killedWithPolystack);
  }

  private static void redirect(LibC c, Pointer actions, int fd, Path file, int flags)
      throws SyscallException {
    if (file != null) {
      Syscalls.checkReturned(
          c.posix_spawn_file_actions_addopen(actions, fd, file.toString(), flags, 0644),
          "posix_spawn_file_actions_addopen(" + fd + ", " + file + ")", Area.SPAWN);
    }
  }

  private static void awaitSelfStop(ChildProcess child) throws SyscallException {
    int[] st = new int[1];
    int r = Native.libc().waitpid(child.pid(), st, WUNTRACED);
    if (r < 0) {
      int errno = Native.errno();
      child.close();
      throw new SyscallException("waitpid(" + child.pid() + ", WUNTRACED)", errno, Area.SPAWN);
    }
    WaitStatus ws = new WaitStatus(st[0]);
    if (!ws.stopped()) {
      child.close();
      throw new SyscallException(
          "start stopped: child " + child.pid() + " " + ws + " before stopping", dev.polystack.host.sys.Errno.ECHILD, Area.SPAWN);
    }
  }
}
