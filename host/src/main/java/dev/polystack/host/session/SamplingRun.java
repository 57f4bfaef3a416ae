package dev.polystack.host.session;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.pipeline.ModuleHashes;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.process.LoadedModule;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.SamplerOutcome;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.sampling.TargetDescriber;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.TargetInfo;
import java.time.Duration;
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

  /**
   * Longest the helper thread sleeps when nothing asks for it: it wakes at once for a refresh
   * request, and otherwise only when the status line or an interval cut is due (each wake-up
   * costs the host CPU whether there is work or not: docs/benchmarks.md, "The agent and
   * record's fixed cost").
   */
  static final long HELPER_MILLIS = 1000;

  private final ProcFs proc;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;
  private final ModuleHashes hashes = new ModuleHashes();
  private final List<String> unhashed = new ArrayList<>();
  private volatile IntervalListener listener;
  private volatile long intervalNanos;
  private volatile boolean retainSamples = true;

  SamplingRun(ProcFs proc, PluginRegistry plugins, PluginGuard guard, Consumer<String> warn) {
    this.proc = proc;
    this.plugins = plugins;
    this.guard = guard;
    this.warn = warn;
  }

  /**
   * Hands the samples of every {@code interval} to {@code l} while runs go on; unless
   * {@code retain}, the final recording then has no samples (only its figures count them).
   */
  void stream(Duration interval, IntervalListener l, boolean retain) {
    this.retainSamples = retain;
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("export interval must be positive");
    }
    this.intervalNanos = interval.toNanos();
    this.listener = l;
  }

  RecordSession.Result run(int pid, String mode, SamplingOptions options,
      RecordSession.Progress progress, Loop loop) throws SamplingException {
    TargetProcess target = new TargetProcess(pid, proc, new ModuleOpener(), ProcessMemory.of(pid),
        plugins, guard, warn);
    TargetInfo info = TargetDescriber.describe(proc, pid);
    Map<String, ModuleInfo> modules = new LinkedHashMap<>();
    AtomicBoolean refreshWanted = new AtomicBoolean();
    Object wake = new Object();
    try {
      target.refresh();
    } catch (ProcReadException e) {
      throw new SamplingException("cannot read process " + pid + ": " + e.getMessage());
    }
    remember(pid, target, modules);
    long startEpoch = System.currentTimeMillis() * 1_000_000L;
    long startNanos = System.nanoTime();
    SampleProcessor processor =
        new SampleProcessor(target, proc, !RecordSession.Mode.PTRACE.id().equals(mode));
    processor.holdSamples(listener == null || retainSamples, listener != null);
    TargetCpuClock cpu = new TargetCpuClock(proc, pid, options.threads(), processor::processed);
    cpu.read(true);
    AtomicBoolean done = new AtomicBoolean();
    Interval stream = new Interval(info, options.periodNanos(), mode, startEpoch);
    Thread helper = new Thread(() -> {
      long lastStatus = System.nanoTime();
      long lastCut = lastStatus;
      while (!done.get()) {
        hashPending(pid, modules);
        if (listener != null && System.nanoTime() - lastCut >= intervalNanos) {
          lastCut = System.nanoTime();
          stream.cut(processor, snapshot(modules), processor.losses(), false);
        }
        if (refreshWanted.getAndSet(false)) {
          try {
            target.refresh();
            remember(pid, target, modules);
          } catch (ProcReadException e) {
            // The process is going away; the sampling loop will notice.
          } catch (RuntimeException e) {
            // A bug here must not silently end module refreshes for the rest of the run.
            processor.lost(HostCounters.REFRESH_FAILED);
          }
        }
        cpu.read(false);
        long now = System.nanoTime();
        if (now - lastStatus >= 1_000_000_000L) {
          lastStatus = now;
          progress.update(processor.processed(), processor.errorCount(), processor.lostCount(),
              (now - startNanos) / 1e9);
        }
        long due = Math.min(lastStatus + 1_000_000_000L, cpu.nextReadAt());
        if (listener != null) {
          due = Math.min(due, lastCut + intervalNanos);
        }
        long waitMillis = Math.max(1, Math.min(HELPER_MILLIS,
            (due - System.nanoTime() + 999_999) / 1_000_000));
        synchronized (wake) {
          try {
            if (!refreshWanted.get() && !done.get()) {
              wake.wait(waitMillis);
            }
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }, "polystack-refresh-" + pid);
    helper.setDaemon(true);
    helper.start();
    SamplerOutcome outcome;
    try {
      outcome = loop.run(target, processor, () -> {
        if (!refreshWanted.getAndSet(true)) {
          synchronized (wake) {
            wake.notifyAll();
          }
        }
      });
    } catch (SyscallException e) {
      throw new SamplingException("sampling process " + pid + " failed: " + e.getMessage());
    } finally {
      done.set(true);
      synchronized (wake) {
        wake.notifyAll();
      }
      processor.close();
      try {
        helper.join(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    cpu.read(true);
    remember(pid, target, modules);
    hashPending(pid, modules);
    long endEpoch = System.currentTimeMillis() * 1_000_000L;
    double seconds = Math.max(1e-9, (System.nanoTime() - startNanos) / 1e9);
    Map<String, Long> losses = new LinkedHashMap<>(processor.losses());
    target.getAndResetCounters().forEach((k, v) -> losses.merge(k, v, Long::sum));
    outcome.counters().forEach((k, v) -> losses.merge(k, v, Long::sum));
    losses.putAll(cpu.counters());
    if (processor.mergedSamples() > 0) {
      // Not lost, but their times are (see SampleStore): said where losses are.
      losses.merge(HostCounters.SAMPLE_TIMES_MERGED.name(), processor.mergedSamples(), Long::sum);
    }
    target.close();
    if (listener != null) {
      stream.cut(processor, snapshot(modules), losses, true);
    }
    var samples = processor.samples();
    long taken = processor.processed();
    int threads = processor.threadCount();
    Recording recording = new Recording(info, startEpoch, Math.max(startEpoch, endEpoch),
        options.periodNanos(), mode, new ArrayList<>(modules.values()), samples, losses);
    PauseStats pauses = processor.pauses();
    RecordSession.Summary summary = new RecordSession.Summary(taken, processor.periods(), threads,
        processor.errors(), losses, pauses.count(), pauses.meanNanos(), pauses.quantileNanos(0.5),
        pauses.quantileNanos(0.99), pauses.maxNanos(),
        threads == 0 ? 0 : taken / seconds / threads);
    return new RecordSession.Result(recording, summary, outcome.exit(), outcome.stoppedByUser(),
        outcome.targetGone());
  }

  private synchronized void remember(int pid, TargetProcess target,
      Map<String, ModuleInfo> out) {
    for (LoadedModule m : target.table().modules()) {
      String key = m.path() + "@" + Long.toHexString(m.start());
      if (!out.containsKey(key)) {
        out.put(key, new ModuleInfo(m.start(), m.end(), m.fileOffset(), m.path(), m.buildId()));
        unhashed.add(key);
      }
    }
  }

  /**
   * Adds the htlhash to modules remembered without one. Runs on the helper thread (and once at
   * the end), never before sampling starts: the first hash loads the JDK's digest provider,
   * which a target that runs for a fixed time would pay for in lost samples.
   */
  private synchronized void hashPending(int pid, Map<String, ModuleInfo> modules) {
    for (String key : unhashed) {
      ModuleInfo m = modules.get(key);
      modules.put(key, new ModuleInfo(m.start(), m.end(), m.fileOffset(), m.path(), m.buildId(),
          hashes.of(pid, m.path(), m.buildId())));
    }
    unhashed.clear();
  }

  private synchronized List<ModuleInfo> snapshot(Map<String, ModuleInfo> modules) {
    return new ArrayList<>(modules.values());
  }

  /** Cuts the samples processed since the previous cut into one interval for the listener. */
  private final class Interval {
    private final TargetInfo info;
    private final long periodNanos;
    private final String mode;
    private long fromEpoch;

    Interval(TargetInfo info, long periodNanos, String mode, long startEpoch) {
      this.info = info;
      this.periodNanos = periodNanos;
      this.mode = mode;
      this.fromEpoch = startEpoch;
    }

    synchronized void cut(SampleProcessor processor, List<ModuleInfo> modules,
        Map<String, Long> losses, boolean last) {
      List<Sample> batch = processor.takeNew();
      long now = Math.max(fromEpoch, System.currentTimeMillis() * 1_000_000L);
      IntervalListener.Totals totals = new IntervalListener.Totals(processor.processed(),
          losses, processor.errors());
      try {
        listener.interval(new Recording(info, fromEpoch, now, periodNanos, mode, modules, batch,
            losses), totals, last);
      } catch (RuntimeException e) {
        // The listener's bug must not end refreshes; the samples count as lost.
        processor.lost(HostCounters.EXPORT_HOOK_FAILED, Sample.count(batch));
      }
      fromEpoch = now;
    }
  }
}
