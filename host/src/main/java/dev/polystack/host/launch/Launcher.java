package dev.polystack.host.launch;

import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.LibC;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.sys.SyscallException.Area;
import dev.polystack.host.sys.Syscalls;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
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

  public ChildProcess start() throws SyscallException {
    LibC c = Native.libc();
    List<String> args = argv;
    if (startStopped) {
      args = new ArrayList<>(List.of("/bin/sh", "-c", STOP_THEN_EXEC));
      args.addAll(argv);
    }
    List<String> env = new ArrayList<>();
    for (Map.Entry<String, String> e : System.getenv().entrySet()) {
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
