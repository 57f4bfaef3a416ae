package dev.polystack.host.session;

import dev.polystack.host.launch.Credentials;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessIdentity;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A ptrace-mode {@code record} of several processes (bpf and perf modes are selections over the
 * host-wide pipeline, {@link PipelineRecord}). Ptrace mode, whose every sample stops a thread
 * of the process it is attached to, runs one {@link RecordSession} per process, each on its own
 * thread with its own target model (modules, plug-ins), joined at the end into one recording
 * whose samples say their process ({@link RecordingMerger}). A process that execs keeps its
 * session, whose map refresh finds the new program's modules and runtimes; one that exits ends
 * its own session only.
 *
 * <p>The run ends at the duration, on the user's stop, when a launched command exits, or when
 * every recorded process has exited.
 */
public final class MultiRecord {
  /** How often the ptrace sessions are looked at for the status line and their end. */
  static final long STATUS_MILLIS = 100;
  /** Most processes recorded at once in ptrace mode: each holds a tracer thread and a model. */
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
    final Thread thread;
    final long[] live = new long[3];
    volatile RecordSession.Result result;
    volatile SamplingException failure;

    Part(int pid, Runnable body) {
      this.pid = pid;
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
    if (backend.mode() != RecordSession.Mode.PTRACE) {
      throw new IllegalArgumentException("bpf and perf modes record on the pipeline");
    }
    if (targets.subprocesses()) {
      throw new IllegalArgumentException("ptrace mode does not follow subprocesses");
    }
    AtomicBoolean stopAll = new AtomicBoolean();
    boolean userStop = false;
    BooleanSupplier partStop = stopAll::get;
    List<Part> parts = new ArrayList<>();
    long start = System.nanoTime();
    try {
      if (!targets.command().isEmpty()) {
        newPart(0, parts, p -> new RecordSession(proc, plugins, guard, warn)
            .launchAs(launchAs)
            .launch(targets.command(), backend, options, partStop, p.progress()));
      } else {
        for (int pid : targets.pids()) {
          // The identity read now: a pid taken over before its session attaches is refused.
          ProcessIdentity id = ProcessIdentity.read(proc, pid).orElse(null);
          newPart(pid, parts, p -> new RecordSession(proc, plugins, guard, warn)
              .expecting(id)
              .attach(pid, backend, options, partStop, p.progress()));
        }
      }
      long lastStatus = start;
      while (!ended(parts)) {
        if (stop.getAsBoolean()) {
          userStop = true;
          break;
        }
        long now = System.nanoTime();
        if (now - lastStatus >= 1_000_000_000L) {
          lastStatus = now;
          report(parts, progress, (now - start) / 1e9);
        }
        if (!sleep(STATUS_MILLIS)) {
          userStop = true;
          break;
        }
      }
    } finally {
      stopAll.set(true);
      for (Part p : parts) {
        joinQuietly(p.thread);
      }
    }
    return join(parts, userStop);
  }

  private interface Body {
    RecordSession.Result run(Part part) throws SamplingException;
  }

  private void newPart(int pid, List<Part> parts, Body body) {
    Part[] self = new Part[1];
    self[0] = new Part(pid, () -> {
      try {
        self[0].result = body.run(self[0]);
      } catch (SamplingException e) {
        self[0].failure = e;
      } catch (RuntimeException e) {
        self[0].failure = new SamplingException("recording process " + pid + " failed: " + e);
      }
    });
    parts.add(self[0]);
    self[0].thread.start();
  }

  /** Every process's session ended (a launched command's with it). */
  private static boolean ended(List<Part> parts) {
    for (Part p : parts) {
      if (p.thread.isAlive()) {
        return false;
      }
    }
    return true;
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
   * Joins what the parts recorded. A target that could not be recorded is an error when none
   * could, else a warning.
   */
  private RecordSession.Result join(List<Part> parts, boolean byUser)
      throws SamplingException {
    List<RecordSession.Result> results = new ArrayList<>();
    SamplingException firstFailure = null;
    List<String> notRecorded = new ArrayList<>();
    for (Part p : parts) {
      if (p.result != null) {
        results.add(p.result);
      } else if (p.failure != null) {
        if (firstFailure == null) {
          firstFailure = p.failure;
        }
        notRecorded.add("process " + p.pid + " not recorded: " + p.failure.getMessage());
      }
    }
    if (results.isEmpty()) {
      throw firstFailure != null ? firstFailure
          : new SamplingException("no process could be recorded");
    }
    notRecorded.forEach(warn);
    RecordSession.Result first = parts.get(0).result != null ? parts.get(0).result
        : results.get(0);
    return RecordingMerger.join(results, Map.of(), 0, first, byUser);
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
