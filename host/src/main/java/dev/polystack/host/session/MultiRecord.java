package dev.polystack.host.session;

import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.proc.ProcessList;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.nostop.BpfSampler;
import dev.polystack.host.sampling.nostop.SharedCapture;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.otel.model.Recording;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A {@code record} of several processes in perf or ptrace mode (bpf mode records them on the
 * host-wide pipeline: {@link PipelineRecord}): one {@link RecordSession} per process, each on its own
 * thread with its own target model (modules, plug-ins), joined at the end into one recording
 * whose samples say their process ({@link RecordingMerger}). With {@code subprocesses}, the
 * descendants of the targets are looked for every {@value #SCAN_MILLIS} ms in /proc and
 * recorded from when they are found; a process that execs keeps its session, whose map refresh
 * finds the new program's modules and runtimes. A process that exits ends its own session only.
 *
 * <p>The run ends at the duration, on the user's stop, when a launched command exits, or when
 * every recorded process has exited. Subprocesses are sampled with no duration of their own and
 * stopped when the run ends.
 */
public final class MultiRecord {
  /** How often /proc is read for new descendants (docs/operations.md: shorter lives may be missed). */
  static final long SCAN_MILLIS = 100;
  /** Most processes recorded at once: each holds a capture, threads and a target model. */
  public static final int MAX_PROCESSES = 64;

  /**
   * What to record.
   *
   * @param pids running processes (empty when launching)
   * @param command a command to launch (empty when attaching)
   * @param subprocesses also record the processes the targets create during the run
   * @param user record only subprocesses whose real and effective user id is this; empty: any
   */
  public record Targets(List<Integer> pids, List<String> command, boolean subprocesses,
      OptionalLong user) {
    public Targets {
      pids = List.copyOf(pids);
      command = List.copyOf(command);
      if (pids.isEmpty() == command.isEmpty()) {
        throw new IllegalArgumentException("either pids or a command");
      }
    }

    public Targets(List<Integer> pids, List<String> command, boolean subprocesses) {
      this(pids, command, subprocesses, OptionalLong.empty());
    }
  }

  private final ProcFs proc;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;
  private final Credentials launchAs;

  public MultiRecord(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn, Credentials launchAs) {
    this.proc = proc;
    this.plugins = plugins;
    this.guard = guard;
    this.launchAs = launchAs;
    Set<String> said = ConcurrentHashMap.newKeySet();
    this.warn = line -> {
      if (said.add(line)) {
        warn.accept(line); // one line for what every process's session would say
      }
    };
  }

  /** One process's session, run on its own thread. */
  private final class Part {
    final int pid;
    final boolean root;
    final Thread thread;
    final long[] live = new long[3];
    volatile RecordSession.Result result;
    volatile SamplingException failure;

    Part(int pid, boolean root, Runnable body) {
      this.pid = pid;
      this.root = root;
      this.thread = new Thread(body, "polystack-record-" + pid);
      thread.setDaemon(true);
    }

    RecordSession.Progress progress() {
      return (samples, errors, lost, seconds) -> {
        synchronized (live) {
          live[0] = samples;
          live[1] = errors;
          live[2] = lost;
        }
      };
    }
  }

  /** Records until the duration ends, {@code stop} says so, or the targets are gone. */
  public RecordSession.Result run(Targets targets, RecordSession.Backend backend,
      SamplingOptions options, BooleanSupplier stop, RecordSession.Progress progress)
      throws SamplingException {
    if (backend.mode() == RecordSession.Mode.BPF) {
      java.util.Optional<String> why = PipelineRecord.unavailableReason();
      if (why.isEmpty()) {
        return new PipelineRecord(proc, plugins, guard, warn, launchAs).run(targets, options,
            stop, progress);
      }
      if (!backend.fallback()) {
        throw new SamplingException("cannot sample in bpf mode: " + why.get()
            + "; use --mode perf or --mode ptrace");
      }
      warn.accept("bpf mode unavailable (" + why.get() + "); sampling in perf mode instead");
      backend = RecordSession.Backend.exactly(RecordSession.Mode.PERF);
    }
    SamplingOptions partOptions = new SamplingOptions(options.rateHz(), 0, options.idle(),
        options.threads(), options.maxDepth(), options.stackBytes());
    AtomicBoolean stopAll = new AtomicBoolean();
    AtomicBoolean userStop = new AtomicBoolean();
    BooleanSupplier partStop = stopAll::get;
    List<Part> parts = new ArrayList<>();
    // Processes are identities, not pids: a root is dropped when its process exits, so a later
    // process that gets its pid is not taken for it, nor are its children (docs/reliability.md).
    Set<ProcessIdentity> seen = new HashSet<>();
    List<ProcessIdentity> roots = new ArrayList<>();
    boolean launchedSeen = false;
    boolean scanTooLarge = false;
    Map<String, Long> extraLosses = new LinkedHashMap<>();
    AtomicInteger launched = new AtomicInteger();
    SharedCapture shared = openShared(backend, options);
    RecordSession.Backend mode = shared != null || backend.mode() != RecordSession.Mode.BPF
        ? backend : RecordSession.Backend.exactly(RecordSession.Mode.PERF);
    long start = System.nanoTime();
    try {
      if (!targets.command().isEmpty()) {
        Part root = newPart(0, true, parts, p -> new RecordSession(proc, plugins, guard, warn)
            .launchAs(launchAs)
            .sharing(shared == null ? null : shared.share())
            .launch(targets.command(), mode, options, partStop, p.progress(), launched::set));
        root.thread.start();
      } else {
        for (int pid : targets.pids()) {
          ProcessIdentity id = ProcessIdentity.read(proc, pid).orElse(null);
          if (id != null) {
            seen.add(id);
            roots.add(id);
          }
          start(pid, id, true, parts, mode, options, partStop, shared);
        }
      }
      long lastStatus = start;
      while (true) {
        if (stop.getAsBoolean()) {
          userStop.set(true);
          break;
        }
        if (ended(parts, targets, options.durationNanos() > 0)) {
          break;
        }
        if (targets.subprocesses()) {
          if (!launchedSeen && launched.get() > 0) {
            // Our own child: its pid is not reused before we reap it.
            launchedSeen = true;
            ProcessIdentity.read(proc, launched.get()).ifPresent(id -> {
              seen.add(id);
              roots.add(id);
            });
          }
          ProcessList list = null;
          try {
            list = ProcessList.read(proc);
          } catch (ProcessList.TooLargeException e) {
            if (!scanTooLarge) {
              scanTooLarge = true;
              warn.accept("subprocesses not looked for: " + e.getMessage());
            }
            extraLosses.merge(HostCounters.SUBPROCESS_SCAN_TOO_LARGE.name(), 1L, Long::sum);
          }
          if (list != null) {
            List<Integer> live = liveRoots(list, roots);
            for (int pid : list.withDescendants(live)) {
              ProcessList.Entry e = list.get(pid).orElse(null);
              if (e == null || live.contains(pid) || !ofUser(e, targets.user())) {
                continue;
              }
              // Read again: it must still be the process the scan saw under this pid.
              ProcessIdentity id = ProcessIdentity.read(proc, pid)
                  .filter(i -> i.startTicks() == e.startTicks()).orElse(null);
              if (id == null || !seen.add(id)) {
                continue;
              }
              roots.add(id);
              if (running(parts) >= MAX_PROCESSES) {
                warn.accept("more than " + MAX_PROCESSES + " processes at once: the others are"
                    + " not recorded (counted as process_limit)");
                extraLosses.merge(HostCounters.PROCESS_LIMIT.name(), 1L, Long::sum);
                continue;
              }
              start(pid, id, false, parts, mode, partOptions, partStop, shared);
            }
          }
        }
        long now = System.nanoTime();
        if (now - lastStatus >= 1_000_000_000L) {
          lastStatus = now;
          report(parts, progress, (now - start) / 1e9);
        }
        if (!sleep(SCAN_MILLIS)) {
          userStop.set(true);
          break;
        }
      }
    } finally {
      stopAll.set(true);
      for (Part p : parts) {
        joinQuietly(p.thread);
      }
      if (shared != null) {
        try {
          // The kernel counts for all processes together: the run's figures, not one's.
          BpfSampler.kernelFigures(shared.counters())
              .forEach((k, v) -> extraLosses.merge(k, v, Long::sum));
        } catch (RuntimeException e) {
          extraLosses.merge(HostCounters.CAPTURE_COUNTERS_UNREADABLE.name(), 1L, Long::sum);
        } finally {
          shared.close();
        }
        if (shared.malformed() > 0) {
          extraLosses.merge(HostCounters.MALFORMED_RECORD.name(), shared.malformed(), Long::sum);
        }
      }
    }
    return join(parts, extraLosses, userStop.get());
  }

  /**
   * In bpf mode, the one capture every process shares; null in the other modes, and when bpf
   * was only the default and cannot load (then perf mode, with one line saying why).
   */
  private SharedCapture openShared(RecordSession.Backend backend, SamplingOptions options)
      throws SamplingException {
    if (backend.mode() != RecordSession.Mode.BPF) {
      return null;
    }
    TickCapture capture = BpfSampler.openCapture(options.rateHz(), backend.fallback(), warn);
    return capture == null ? null : new SharedCapture(capture);
  }

  private interface Body {
    RecordSession.Result run(Part part) throws SamplingException;
  }

  private Part newPart(int pid, boolean root, List<Part> parts, Body body) {
    Part[] self = new Part[1];
    self[0] = new Part(pid, root, () -> {
      try {
        self[0].result = body.run(self[0]);
      } catch (SamplingException e) {
        self[0].failure = e;
      } catch (RuntimeException e) {
        self[0].failure = new SamplingException("recording process " + pid + " failed: " + e);
      }
    });
    parts.add(self[0]);
    return self[0];
  }

  /**
   * The roots whose process still runs under their pid in {@code list} (same start time); the
   * others are dropped from {@code roots} for good.
   */
  private static List<Integer> liveRoots(ProcessList list, List<ProcessIdentity> roots) {
    roots.removeIf(id -> list.get(id.pid())
        .filter(e -> e.startTicks() == id.startTicks()).isEmpty());
    List<Integer> live = new ArrayList<>();
    for (ProcessIdentity id : roots) {
      live.add(id.pid());
    }
    return live;
  }

  private static boolean ofUser(ProcessList.Entry e, OptionalLong user) {
    return user.isEmpty() || (e.uid() == user.getAsLong() && e.euid() == user.getAsLong());
  }

  /**
   * Records {@code pid} on a thread of its own; with {@code identity}, only if the pid still
   * names that process when the session starts.
   */
  private void start(int pid, ProcessIdentity identity, boolean root, List<Part> parts,
      RecordSession.Backend backend, SamplingOptions options, BooleanSupplier stop,
      SharedCapture shared) {
    Part part = newPart(pid, root, parts, p -> {
      try {
        return new RecordSession(proc, plugins, guard, warn)
            .sharing(shared == null ? null : shared.share())
            .expecting(identity)
            .attach(pid, backend, options, stop, p.progress());
      } finally {
        if (shared != null) {
          shared.release(pid);
        }
      }
    });
    part.thread.start();
  }

  /**
   * A launched command's run ends with it; an attached one's when every process ended, or with
   * a duration when the processes given at the start ended (each counts its duration from its
   * own start, as a record of one does). Subprocesses are stopped then.
   */
  private static boolean ended(List<Part> parts, Targets targets, boolean timed) {
    if (!targets.command().isEmpty()) {
      return !parts.get(0).thread.isAlive();
    }
    for (Part p : parts) {
      if (p.thread.isAlive() && (p.root || !timed)) {
        return false;
      }
    }
    return true;
  }

  private static int running(List<Part> parts) {
    int n = 0;
    for (Part p : parts) {
      if (p.thread.isAlive()) {
        n++;
      }
    }
    return n;
  }

  private static void report(List<Part> parts, RecordSession.Progress progress, double seconds) {
    long samples = 0;
    long errors = 0;
    long lost = 0;
    for (Part p : parts) {
      synchronized (p.live) {
        samples += p.live[0];
        errors += p.live[1];
        lost += p.live[2];
      }
    }
    progress.update(samples, errors, lost, seconds);
  }

  /**
   * Joins what the parts recorded. A target given at the start that could not be recorded is
   * an error when none could, else a warning; a subprocess gone before it was attached is only
   * counted (subprocess_gone): short-lived children are the norm under a build or a shell.
   */
  private RecordSession.Result join(List<Part> parts, Map<String, Long> extraLosses,
      boolean byUser) throws SamplingException {
    List<RecordSession.Result> results = new ArrayList<>();
    List<RecordSession.ProcessPart> processes = new ArrayList<>();
    SamplingException firstFailure = null;
    List<String> notRecorded = new ArrayList<>();
    for (Part p : parts) {
      if (p.result != null) {
        results.add(p.result);
        Recording r = p.result.recording();
        processes.add(new RecordSession.ProcessPart(r.target().pid(),
            r.target().executableName(), p.result.summary().samples(),
            p.result.summary().losses(), p.result.targetGone()));
      } else if (p.failure != null && p.root) {
        if (firstFailure == null) {
          firstFailure = p.failure;
        }
        notRecorded.add("process " + p.pid + " not recorded: " + p.failure.getMessage());
      } else if (p.failure != null) {
        extraLosses.merge(HostCounters.SUBPROCESS_GONE.name(), 1L, Long::sum);
      }
    }
    if (results.isEmpty()) {
      throw firstFailure != null ? firstFailure
          : new SamplingException("no process could be recorded");
    }
    notRecorded.forEach(warn);
    Recording merged = RecordingMerger.merge(results);
    Map<String, Long> losses = new LinkedHashMap<>(merged.losses());
    extraLosses.forEach((k, v) -> losses.merge(k, v, Long::sum));
    merged = new Recording(merged.target(), merged.startEpochNanos(), merged.endEpochNanos(),
        merged.periodNanos(), merged.mode(), merged.modules(), merged.samples(), losses);
    RecordSession.Result first = parts.get(0).root && parts.get(0).result != null
        ? parts.get(0).result : results.get(0);
    boolean allGone = results.stream().allMatch(RecordSession.Result::targetGone);
    return new RecordSession.Result(merged, RecordingMerger.summary(results, losses),
        first.targetExit(), byUser, allGone, first.killedAtEnd(), processes);
  }

  private static void joinQuietly(Thread t) {
    boolean interrupted = false;
    while (t.isAlive()) {
      try {
        t.join();
      } catch (InterruptedException e) {
        interrupted = true; // every session must end (detach) before the run returns
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** False when interrupted: the run ends as if the user stopped it. */
  private static boolean sleep(long millis) {
    try {
      Thread.sleep(millis);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
