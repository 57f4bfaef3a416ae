package dev.polystack.host.sampling;

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
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.TargetInfo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * What every record run shares whatever the backend: the target model, the module refresh and
 * status thread, the processing stage, and turning it all into a {@link Recording}. The backend
 * is the {@link Loop}; it runs on the calling thread (or hands itself to the tracer thread).
 */
final class SamplingRun {

  /** A backend's sampling loop. */
  interface Loop {
    /**
     * Samples until the duration ends, the user stops or the target exits.
     *
     * @param refreshRequest asks the helper thread to re-read the memory map; never blocks
     */
    SamplerOutcome run(TargetProcess target, SampleProcessor processor, Runnable refreshRequest)
        throws SyscallException, SamplingException;
  }

  private final ProcFs proc;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;

  SamplingRun(ProcFs proc, PluginRegistry plugins, PluginGuard guard, Consumer<String> warn) {
    this.proc = proc;
    this.plugins = plugins;
    this.guard = guard;
    this.warn = warn;
  }

  RecordSession.Result run(int pid, String mode, SamplingOptions options,
      RecordSession.Progress progress, Loop loop) throws SamplingException {
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
          } catch (RuntimeException e) {
            // A bug here must not silently end module refreshes for the rest of the run.
            processor.lost("refresh_failed");
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
    SamplerOutcome outcome;
    try {
      outcome = loop.run(target, processor, () -> refreshWanted.set(true));
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
        options.periodNanos(), mode, new ArrayList<>(modules.values()), samples, losses);
    PauseStats pauses = processor.pauses();
    RecordSession.Summary summary = new RecordSession.Summary(samples.size(), threads,
        processor.errors(), losses, pauses.count(), pauses.meanNanos(), pauses.quantileNanos(0.5),
        pauses.quantileNanos(0.99), pauses.maxNanos(),
        threads == 0 ? 0 : samples.size() / seconds / threads);
    return new RecordSession.Result(recording, summary, outcome.exit(), outcome.stoppedByUser(),
        outcome.targetGone());
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
