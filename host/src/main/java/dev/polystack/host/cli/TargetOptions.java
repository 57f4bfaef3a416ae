package dev.polystack.host.cli;

import dev.polystack.host.launch.Accounts;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.session.MultiRecord;
import dev.polystack.host.session.RecordSession;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.function.BooleanSupplier;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * What to sample and how, shared by the sampling commands ({@code record}, {@code top}): the
 * target (--pid or a command after --), the backend (--mode with its default and fallback), the
 * rate, duration and thread filter, and who a launched command runs as.
 */
final class TargetOptions {
  private static final Path PROC = Path.of("/proc");

  @Option(names = {"--pid", "-p"}, paramLabel = "PID", split = ",",
      description = "Attach to this running process (record: several, comma-separated or"
          + " repeated).")
  List<Integer> pids = new ArrayList<>();

  /** Selection by name and --subprocesses, for the commands that offer them (record). */
  private TargetSelection selection;
  /** The processes to attach to, once {@link #resolve} ran. */
  private List<Integer> resolved;

  @Parameters(paramLabel = "COMMAND", arity = "0..*",
      description = "Launch this command under the profiler (write it after --).")
  List<String> command = new ArrayList<>();

  @Option(names = {"--rate", "-r"}, paramLabel = "HZ", defaultValue = "99",
      description = "Samples per second per thread (default: ${DEFAULT-VALUE}).")
  int rate;

  @Option(names = {"--duration", "-d"}, paramLabel = "D", converter = Durations.class,
      description = "How long to sample (10 or 10s, 500ms, 2m); default: until the target exits or"
          + " Ctrl-C.")
  Duration duration;

  @Option(names = "--mode", paramLabel = "MODE",
      description = "bpf (capture each tick in the kernel with eBPF; exact, the target never"
          + " stops), ptrace (stop each sampled thread briefly; exact) or perf (perf_event"
          + " samples, runtime state read after the tick; never stops). Default: bpf, or perf"
          + " with one line saying why when bpf cannot load (ptrace with --idle).")
  String mode;

  @Option(names = "--idle",
      description = "Also sample threads that are not running (ptrace mode only).")
  boolean idle;

  @Option(names = "--tid", paramLabel = "TID", split = ",",
      description = "Only these thread ids (comma-separated or repeated).")
  List<Integer> threads = new ArrayList<>();

  /**
   * py-spy's --threads (a flag there: thread ids as root frames), refused in one line rather
   * than read as something else.
   */
  @Option(names = "--threads", hidden = true)
  boolean pySpyThreads;

  @Mixin LaunchOptions launchAs = new LaunchOptions();

  /**
   * Checks the options against each other and the target before anything is attached or
   * launched; a usage error or a command that cannot run fails here, in one line.
   *
   * @return the backend to sample with
   */
  RecordSession.Backend check() {
    if (pySpyThreads) {
      throw new UsageException("--threads: no such option; for py-spy's --threads (each stack"
          + " under its thread) use --per-thread, to keep some threads use --tid TID");
    }
    boolean attaching = !pids.isEmpty() || (selection != null && selection.byName());
    if (attaching == !command.isEmpty()) {
      throw new UsageException("give either --pid PID" + (selection != null
          ? " (or --comm, --match)" : "") + " or a command after --, not both or neither");
    }
    if (selection == null && pids.size() > 1) {
      throw new UsageException("--pid: this command samples one process; record takes several");
    }
    RecordSession.Backend backend = backend();
    if (selection != null) {
      selection.check(backend.mode(), attaching, pids.size(), threads);
    }
    if (backend.mode() != RecordSession.Mode.PTRACE && idle) {
      throw new UsageException("--idle cannot be used with --mode " + backend.mode().id() + ": "
          + backend.mode().id() + " samples come from a CPU clock that only ticks while a thread"
          + " runs; use --mode ptrace --idle to sample sleeping threads too");
    }
    for (int p : pids) {
      if (p <= 0) {
        throw new UsageException("--pid " + p + ": a process id is a positive number");
      }
    }
    for (int tid : threads) {
      // A TID that no thread has would record nothing and still "succeed".
      if (tid <= 0 || !Files.isDirectory(PROC.resolve(Integer.toString(tid)))) {
        throw new UsageException("--tid " + tid + ": no such thread");
      }
    }
    for (int p : pids) {
      KernelThreads.refuse(PROC, p, "--pid");
    }
    if (selection != null) {
      launchAs.checkSelecting(!command.isEmpty(), selection.byName() || selection.subprocesses());
    } else {
      launchAs.checkLaunching(!command.isEmpty());
    }
    Integer pid = pids.size() == 1 ? pids.get(0) : null;
    if (pid != null && !threads.isEmpty() && Files.isDirectory(Path.of("/proc", pid.toString()))) {
      for (int tid : threads) {
        if (!Files.isDirectory(Path.of("/proc", pid.toString(), "task", Integer.toString(tid)))) {
          throw new UsageException("--tid " + tid + ": not a thread of process " + pid
              + " (see /proc/" + pid + "/task)");
        }
      }
    }
    if (!command.isEmpty()) {
      RecordCommand.checkRunnable(command.get(0), System.getenv("PATH"));
    }
    return backend;
  }

  /** Who a launched command runs as (null: polystack's own user); call after {@link #check}. */
  Credentials launchCredentials(Console console) {
    return command.isEmpty() ? null
        : launchAs.resolve(System.getenv(), Accounts.effectiveUid(), console::note);
  }

  /** Offers --comm, --match and --subprocesses (and several --pid) through {@code s}. */
  TargetOptions selectingWith(TargetSelection s) {
    this.selection = s;
    return this;
  }

  /** Whether the run may record several processes (known before names are resolved). */
  boolean several() {
    return pids.size() > 1
        || (selection != null && (selection.byName() || selection.subprocesses()));
  }

  /**
   * Resolves --comm and --match to the processes to attach to, saying what was selected (or
   * failing in one line when nothing was); call after {@link #check}, before attaching.
   */
  void resolve(Console console) {
    resolved = selection == null || pids.isEmpty() && !selection.byName() ? List.copyOf(pids)
        : selection.resolve(ProcFs.system(), pids, launchAs.selectedUid(), console,
            backend().mode() == RecordSession.Mode.PTRACE);
  }

  /** Attaches to --pid or launches the command, and samples until the run ends. */
  RecordSession.Result sample(RecordSession session, RecordSession.Backend backend,
      SamplingOptions options, BooleanSupplier stop, RecordSession.Progress progress)
      throws SamplingException {
    return sample(session, null, backend, options, stop, progress);
  }

  /**
   * Attaches to the targets or launches the command, and samples until the run ends; several
   * processes (or --subprocesses) are recorded by {@code multi}.
   */
  RecordSession.Result sample(RecordSession session, MultiRecord multi,
      RecordSession.Backend backend, SamplingOptions options, BooleanSupplier stop,
      RecordSession.Progress progress) throws SamplingException {
    List<Integer> targets = resolved != null ? resolved : List.copyOf(pids);
    boolean subprocesses = selection != null && selection.subprocesses();
    if (backend.mode() != RecordSession.Mode.PTRACE) {
      return session.record(new MultiRecord.Targets(targets, command, subprocesses,
          launchAs.selectedUid()), backend, options, stop, progress, pid -> { });
    }
    if (multi != null && (targets.size() > 1 || subprocesses)) {
      return multi.run(new MultiRecord.Targets(targets, command, subprocesses,
          launchAs.selectedUid()), backend, options, stop, progress);
    }
    return !targets.isEmpty()
        ? session.attach(targets.get(0), backend, options, stop, progress)
        : session.launch(command, backend, options, stop, progress);
  }

  /** --mode as given; by default bpf with perf as its fallback, or ptrace for --idle. */
  RecordSession.Backend backend() {
    if (mode == null) {
      return idle ? RecordSession.Backend.exactly(RecordSession.Mode.PTRACE)
          : RecordSession.Backend.defaultBackend();
    }
    try {
      return RecordSession.Backend.exactly(RecordSession.Mode.parse(mode));
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage());
    }
  }

  SamplingOptions options(int maxDepth) {
    try {
      return new SamplingOptions(rate, duration == null ? 0 : duration.toNanos(), idle,
          new HashSet<>(threads), maxDepth, SamplingOptions.DEFAULT_STACK_BYTES);
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage());
    }
  }
}
