package dev.polystack.host.sampling;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.memory.RemoteMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.CommandLine;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessView;
import dev.polystack.host.process.LoadedModule;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.TargetInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * One {@code record} run: attach to (or launch) the target, sample it until the duration ends,
 * the user stops it or it exits, always detach, and assemble the {@link Recording}.
 */
public final class RecordSession {

  /** What a run produced, for the summary and the exit code. */
  public record Result(Recording recording, Summary summary, WaitStatus targetExit,
      boolean stoppedByUser) {}

  /**
   * Figures for the end-of-run summary. The target pause per sample runs from the interrupt to
   * the resume; the median and p99 come from a bounded reservoir, the mean and count are exact.
   */
  public record Summary(long samples, int threads, Map<String, Long> errors,
      Map<String, Long> losses, long pauseCount, long meanPauseNanos, long medianPauseNanos,
      long p99PauseNanos, long maxPauseNanos, double achievedHz) {}

  /** Live figures for the status line. */
  public interface Progress {
    void update(long samples, long errors, long lost, double elapsedSeconds);
  }

  private final ProcFs proc;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;

  public RecordSession(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn) {
    this.proc = proc;
    this.plugins = plugins;
    this.guard = guard;
    this.warn = warn;
  }

  /** Checks that {@code pid} can be attached to; the message says why not and what to do. */
  public void checkAttachable(int pid) throws SamplingException {
    ProcessView view = proc.forPid(pid);
    try {
      var status = view.status();
      if (status.tracerPid() != 0) {
        throw new SamplingException("process " + pid + " is already traced by process "
            + status.tracerPid() + " (a debugger or another profiler); detach it first");
      }
      if (status.state() == dev.polystack.host.proc.ThreadState.ZOMBIE) {
        throw new SamplingException("process " + pid + " is a zombie: it has exited and only"
            + " waits for its parent to collect it");
      }
    } catch (ProcReadException e) {
      throw new SamplingException(e.getMessage());
    }
  }

  public Result attach(int pid, SamplingOptions options, BooleanSupplier stop, Progress progress)
      throws SamplingException {
    checkAttachable(pid);
    try (Tracer tracer = Tracer.start(pid)) {
      return run(pid, tracer, options, stop, progress, false);
    }
  }

  /** Launches {@code command} with inherited stdio, traced from its first instruction. */
  public Result launch(List<String> command, SamplingOptions options, BooleanSupplier stop,
      Progress progress) throws SamplingException {
    ChildProcess child;
    try {
      child = Launcher.command(command).startStopped(true).start();
    } catch (SyscallException e) {
      throw new SamplingException("cannot start " + command.get(0) + ": " + e.getMessage());
    }
    try (child; Tracer tracer = Tracer.start(child.pid())) {
      try {
        child.seizeAndRunToExec(tracer, PtraceSampler.OPTIONS, Duration.ofSeconds(10));
      } catch (SyscallException | TimeoutException e) {
        throw new SamplingException("cannot run " + command.get(0) + ": " + e.getMessage());
      }
      // The program stops in its exec: resume it only from inside the sampling loop.
      tracer.call(p -> {
        p.cont(child.pid(), 0);
        return null;
      });
      return run(child.pid(), tracer, options, stop, progress, true);
    } catch (SyscallException e) {
      throw new SamplingException(e.getMessage());
    }
  }

  private Result run(int pid, Tracer tracer, SamplingOptions options, BooleanSupplier stop,
      Progress progress, boolean alreadySeized) throws SamplingException {
    TargetProcess target = new TargetProcess(pid, proc, new ModuleOpener(), RemoteMemory.of(pid),
        plugins, guard, warn);
    TargetInfo info = describe(pid);
    Map<String, ModuleInfo> modules = new LinkedHashMap<>();
    AtomicBoolean refreshWanted = new AtomicBoolean();
    try {
      target.refresh();
    } catch (ProcReadException e) {
      throw new SamplingException("cannot read process " + pid + ": " + e.getMessage());
    }
    remember(target, modules);
    long startEpoch = System.currentTimeMillis() * 1_000_000L;
    long startNanos = System.nanoTime();
    SampleProcessor processor = new SampleProcessor(target, proc);
    AtomicBoolean done = new AtomicBoolean();
    Thread helper = new Thread(() -> {
      long lastStatus = System.nanoTime();
      while (!done.get()) {
        if (refreshWanted.getAndSet(false)) {
          try {
            target.refresh();
            remember(target, modules);
          } catch (ProcReadException e) {
            // The process is going away; the sampling loop will notice.
          }
        }
        long now = System.nanoTime();
        if (now - lastStatus >= 1_000_000_000L) {
          lastStatus = now;
          progress.update(processor.processed(), processor.errorCount(), processor.lostCount(),
              (now - startNanos) / 1e9);
        }
        try {
          Thread.sleep(50);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "polystack-refresh-" + pid);
    helper.setDaemon(true);
    helper.start();
    PtraceSampler.Outcome outcome;
    try {
      PtraceSampler sampler = new PtraceSampler(target, options, new StackWalker(options.maxDepth(),
          guard), processor, proc, () -> refreshWanted.set(true));
      outcome = sampler.run(tracer, stop, alreadySeized);
    } catch (SyscallException e) {
      throw new SamplingException("sampling process " + pid + " failed: " + e.getMessage());
    } finally {
      done.set(true);
      processor.close();
      try {
        helper.join(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    remember(target, modules);
    long endEpoch = System.currentTimeMillis() * 1_000_000L;
    double seconds = Math.max(1e-9, (System.nanoTime() - startNanos) / 1e9);
    Map<String, Long> losses = new LinkedHashMap<>(processor.losses());
    target.getAndResetCounters().forEach((k, v) -> losses.merge(k, v, Long::sum));
    target.close();
    var samples = processor.samples();
    int threads = processor.threadCount();
    Recording recording = new Recording(info, startEpoch, Math.max(startEpoch, endEpoch),
        options.periodNanos(), "ptrace", new ArrayList<>(modules.values()), samples, losses);
    PauseStats pauses = processor.pauses();
    Summary summary = new Summary(samples.size(), threads, processor.errors(), losses,
        pauses.count(), pauses.meanNanos(), pauses.quantileNanos(0.5), pauses.quantileNanos(0.99),
        pauses.maxNanos(),
        threads == 0 ? 0 : samples.size() / seconds / threads);
    return new Result(recording, summary, outcome.exit(), outcome.stoppedByUser());
  }

  private static synchronized void remember(TargetProcess target, Map<String, ModuleInfo> out) {
    for (LoadedModule m : target.table().modules()) {
      String key = m.path() + "@" + Long.toHexString(m.start());
      out.putIfAbsent(key, new ModuleInfo(m.start(), m.end(), m.fileOffset(), m.path(),
          m.buildId()));
    }
  }

  private TargetInfo describe(int pid) {
    ProcessView view = proc.forPid(pid);
    String exe = "";
    List<String> args = List.of();
    try {
      exe = view.exe().replace(" (deleted)", "");
    } catch (ProcReadException e) {
      // keep empty: the command line still names the program
    }
    try {
      CommandLine cmd = view.cmdline();
      args = cmd.arguments();
    } catch (ProcReadException e) {
      // a kernel thread or a vanished process has no command line
    }
    return new TargetInfo(pid, exe, args);
  }
}
