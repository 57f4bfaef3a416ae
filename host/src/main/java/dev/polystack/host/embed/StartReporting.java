package dev.polystack.host.embed;

import dev.polystack.host.pipeline.CaptureEngine;
import dev.polystack.host.sampling.nostop.ProcessTicks;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * An engine that tells {@link ProfilingSession#start} how its start went: the pipeline starts
 * it on the pipeline thread, and the caller of {@code start()} waits for the answer.
 */
final class StartReporting implements CaptureEngine {
  private final CaptureEngine engine;
  private final CompletableFuture<Void> started;

  StartReporting(CaptureEngine engine, CompletableFuture<Void> started) {
    this.engine = engine;
    this.started = started;
  }

  CompletableFuture<Void> started() {
    return started;
  }

  @Override
  public String name() {
    return engine.name();
  }

  @Override
  public Optional<String> check() {
    return engine.check();
  }

  @Override
  public void start() throws EngineException {
    try {
      engine.start();
    } catch (EngineException | RuntimeException e) {
      started.completeExceptionally(e);
      throw e;
    }
    started.complete(null);
  }

  @Override
  public void poll(int timeoutMillis, Listener listener) {
    engine.poll(timeoutMillis, listener);
  }

  @Override
  public void select(int pid, boolean followChildren) {
    engine.select(pid, followChildren);
  }

  @Override
  public void deselect(int pid) {
    engine.deselect(pid);
  }

  @Override
  public ProcessTicks.PlanSlots planSlots() {
    return engine.planSlots();
  }

  @Override
  public Map<String, Long> counters() {
    return engine.counters();
  }

  @Override
  public void close() {
    engine.close();
  }
}
