package dev.polystack.host.embed;

import dev.polystack.host.pipeline.CaptureEngine;
import dev.polystack.host.pipeline.HostPipeline;
import dev.polystack.host.pipeline.PipelineStats;
import dev.polystack.host.pipeline.ProcessProfile;
import dev.polystack.host.plugins.PluginGuard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;

/**
 * A running profiling session, from {@link Profiler#start}. The capture runs on its own platform
 * thread ({@code polystack-embed-pipeline}) and the listener on another ({@code
 * polystack-embed-listener}); both are daemon threads, so a session never keeps the JVM alive,
 * and nothing the session holds outlives {@link #stop()} (the kernel's capture is owned by file
 * descriptors of this process). Thread-safe.
 */
public final class ProfilingSession implements AutoCloseable {
  /** How long {@link #stop()} waits for the last interval to reach the listener. */
  public static final Duration DEFAULT_STOP_TIMEOUT = Duration.ofSeconds(30);

  private static final PipelineStats NONE =
      new PipelineStats(0, 0, 0, Map.of(), Map.of(), Map.of(), Map.of());

  private final PluginGuard guard;
  private final Delivery delivery;
  private final Thread pipelineThread;
  private volatile boolean stopRequested;
  /** Until when the last interval may wait for room in the listener's queue. */
  private volatile long lastOfferDeadline;
  private volatile PipelineStats latest = NONE;
  private volatile String failure;
  private long sequence;
  private ProfilerStats finalStats;

  private ProfilingSession(HostPipeline pipeline, CaptureEngine engine, Duration interval,
      PluginGuard guard, Delivery delivery) {
    this.guard = guard;
    this.delivery = delivery;
    this.pipelineThread = new Thread(() -> run(pipeline, engine, interval),
        "polystack-embed-pipeline");
    pipelineThread.setDaemon(true);
  }

  /** Starts the threads and waits until the capture runs, or says why it could not. */
  static ProfilingSession start(HostPipeline pipeline, CaptureEngine engine, Duration interval,
      PluginGuard guard, IntervalListener listener, int queue, Consumer<String> warnings)
      throws ProfilerException {
    CompletableFuture<Void> started = new CompletableFuture<>();
    ProfilingSession session = new ProfilingSession(pipeline,
        new StartReporting(engine, started), interval, guard,
        new Delivery(listener, queue, warnings));
    session.delivery.start();
    session.pipelineThread.start();
    try {
      started.get();
    } catch (ExecutionException e) {
      session.stop(Duration.ofSeconds(5));
      Throwable cause = e.getCause();
      String why = cause instanceof CaptureEngine.EngineException ? cause.getMessage()
          : oneLine(cause);
      throw new ProfilerException("cannot profile: " + why, cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      session.stop(Duration.ofSeconds(5));
      throw new ProfilerException("cannot profile: interrupted while the capture started", e);
    }
    return session;
  }

  private void run(HostPipeline pipeline, CaptureEngine engine, Duration interval) {
    CompletableFuture<Void> started = ((StartReporting) engine).started();
    try {
      pipeline.run(engine, interval, 0, () -> stopRequested, this::cut);
    } catch (CaptureEngine.EngineException e) {
      started.completeExceptionally(e); // already so: the engine reported it
    } catch (RuntimeException | Error e) {
      failure = oneLine(e);
      started.completeExceptionally(e);
      if (e instanceof VirtualMachineError) {
        throw e;
      }
    } finally {
      delivery.endOfInput();
    }
  }

  /** The pipeline's sink, on the pipeline thread: never blocks, except for the last interval. */
  private void cut(List<ProcessProfile> profiles, PipelineStats stats,
      boolean last) {
    latest = stats;
    List<ProcessRecording> processes = new ArrayList<>(profiles.size());
    for (ProcessProfile p : profiles) {
      processes.add(new ProcessRecording(p.recording(), p.resource()));
    }
    ProfileInterval interval = new ProfileInterval(sequence++, processes, stats(), last);
    delivery.offer(interval, last ? lastOfferDeadline : 0);
  }

  /** Whether the capture runs: started, not stopped, not ended by a {@link #failure()}. */
  public boolean isRunning() {
    return pipelineThread.isAlive() && !stopRequested;
  }

  /**
   * Why the capture ended on its own (an internal error), in one line; empty while it runs and
   * after a normal {@link #stop()}.
   */
  public Optional<String> failure() {
    return Optional.ofNullable(failure);
  }

  /** The figures as of the last interval's cut, with the listener's counts as of now. */
  public ProfilerStats stats() {
    PipelineStats s = latest;
    return new ProfilerStats(s.samples(), s.processesTracked(), s.processesSeen(), s.losses(),
        s.errors(), s.figures(), guard.failureCounts(), delivery.delivered(), delivery.dropped(),
        delivery.samplesDropped(), delivery.failures());
  }

  /** {@link #stop(Duration)} with {@link #DEFAULT_STOP_TIMEOUT}. */
  public ProfilerStats stop() {
    return stop(DEFAULT_STOP_TIMEOUT);
  }

  /**
   * Stops the capture, cuts the interval in progress (delivered with {@link
   * ProfileInterval#last()}), waits up to {@code timeout} for the listener to have every interval,
   * and returns the final figures; what the listener has not had by then is dropped and
   * counted. Idempotent: later calls return the same figures at once. Called from the listener
   * itself, it asks the capture to stop and returns at once with {@link #stats()}; the last
   * interval follows when the listener returns (dropped, counted, if the queue is full).
   */
  public synchronized ProfilerStats stop(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (finalStats != null) {
      return finalStats;
    }
    long deadline = System.nanoTime() + Math.max(0, timeout.toNanos());
    // Called by the listener (or a warning) itself, nothing can wait for the thread it blocks.
    boolean ownThread = delivery.onListenerThread() || Thread.currentThread() == pipelineThread;
    lastOfferDeadline = ownThread ? 0 : deadline;
    stopRequested = true;
    if (ownThread) {
      return stats(); // a later stop() from another thread waits and returns the final figures
    }
    try {
      long left = deadline - System.nanoTime();
      if (left > 0) {
        pipelineThread.join(Math.max(1, left / 1_000_000));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (pipelineThread.isAlive() && failure == null) {
      failure = "the capture did not stop within " + timeout.toMillis() + " ms";
    }
    delivery.awaitDelivered(deadline);
    finalStats = stats();
    return finalStats;
  }

  private static String oneLine(Throwable t) {
    return t.getClass().getSimpleName() + (t.getMessage() == null ? ""
        : ": " + t.getMessage().lines().findFirst().orElse(""));
  }

  /** {@link #stop()}. */
  @Override
  public void close() {
    stop();
  }
}
