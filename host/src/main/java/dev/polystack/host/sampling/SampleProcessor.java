package dev.polystack.host.sampling;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.plugin.api.Frame;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The stage after capture: names frames, interns stacks, remembers thread names, and keeps the
 * counters. Runs on its own thread behind a bounded queue so the sampling loop never waits; a
 * full queue drops the sample and counts it.
 */
final class SampleProcessor implements SampleSink, AutoCloseable {
  static final int QUEUE_CAPACITY = 1 << 14;
  static final long THREAD_NAME_TTL_NANOS = 2_000_000_000L;

  private record Named(String name, long readAt) {}

  private final TargetProcess target;
  private final ProcFs proc;
  private final BlockingQueue<ThreadSample> queue = new ArrayBlockingQueue<>(QUEUE_CAPACITY);
  private final Map<String, LongAdder> losses = new ConcurrentHashMap<>();
  private final Thread thread;
  private final FrameNamer namer = new FrameNamer();
  private final Map<List<Frame>, StackTrace> stacks = new HashMap<>();
  private final Map<Integer, Named> threadNames = new HashMap<>();
  private final List<Sample> samples = new ArrayList<>();
  private final java.util.Set<Integer> threads = new java.util.HashSet<>();
  private volatile boolean retain = true;
  private int taken;
  private final PauseStats pauses = new PauseStats();
  private final Map<String, Long> errors = new TreeMap<>();
  private volatile boolean closing;
  private volatile long processed;
  /** The sampling periods the processed samples stand for (see {@link ThreadSample#periods}). */
  private volatile long periods;

  SampleProcessor(TargetProcess target, ProcFs proc) {
    this.target = target;
    this.proc = proc;
    this.thread = new Thread(this::run, "polystack-samples-" + target.pid());
    thread.setDaemon(true);
    thread.start();
  }

  @Override
  public void accept(ThreadSample sample) {
    if (!queue.offer(sample)) {
      lost("queue_full");
    }
  }

  @Override
  public void lost(String reason) {
    losses.computeIfAbsent(reason, k -> new LongAdder()).increment();
  }

  @Override
  public void lost(String reason, long count) {
    if (count > 0) {
      losses.computeIfAbsent(reason, k -> new LongAdder()).add(count);
    }
  }

  private void run() {
    while (true) {
      ThreadSample s;
      try {
        s = queue.poll(50, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        continue;
      }
      if (s == null) {
        if (closing) {
          return;
        }
        continue;
      }
      process(s);
    }
  }

  private synchronized void process(ThreadSample s) {
    List<Frame> frames = namer.name(s.stack(), target.table());
    StackTrace stack = stacks.computeIfAbsent(frames, StackTrace::new);
    samples.add(new Sample(s.tid(), threadName(s.tid()), s.epochNanos(), stack,
        sampleAttributes(frames), s.periods()));
    threads.add(s.tid());
    pauses.add(s.pauseNanos());
    for (String reason : s.stack().errors()) {
      errors.merge(reason, 1L, Long::sum);
    }
    processed++;
    periods += s.periods();
  }

  /**
   * Per-sample facts a plug-in put on the leaf-most frame it produced (LuaJIT's vmstate and
   * trace number) become sample attributes, where outputs expect them.
   */
  private static Map<String, String> sampleAttributes(List<Frame> frames) {
    for (Frame f : frames) {
      if (!f.attributes().isEmpty()) {
        return f.attributes();
      }
    }
    return Map.of();
  }

  private String threadName(int tid) {
    long now = System.nanoTime();
    Named named = threadNames.get(tid);
    if (named == null || now - named.readAt() > THREAD_NAME_TTL_NANOS) {
      String name = named == null ? "" : named.name();
      try {
        name = proc.forPid(target.pid()).threadName(tid);
      } catch (ProcReadException e) {
        // The thread is gone; keep the last name we knew.
      }
      named = new Named(name, now);
      threadNames.put(tid, named);
    }
    return named.name();
  }

  long processed() {
    return processed;
  }

  long periods() {
    return periods;
  }

  long lostCount() {
    return losses.values().stream().mapToLong(LongAdder::sum).sum();
  }

  synchronized long errorCount() {
    return errors.values().stream().mapToLong(Long::longValue).sum();
  }

  /** Waits until everything queued is processed; then the results below are final. */
  @Override
  public void close() {
    closing = true;
    try {
      thread.join(TimeUnit.SECONDS.toMillis(30));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  synchronized List<Sample> samples() {
    return List.copyOf(samples);
  }

  /**
   * Keep every sample for the final recording (the default), or only until {@link #takeNew}
   * hands it out: a run that only streams then holds one interval in memory, not the session.
   */
  void retainSamples(boolean keep) {
    this.retain = keep;
  }

  /** The samples processed since the previous call, for streaming by interval. */
  synchronized List<Sample> takeNew() {
    List<Sample> out = List.copyOf(samples.subList(taken, samples.size()));
    if (retain) {
      taken = samples.size();
    } else {
      samples.clear();
      taken = 0;
    }
    return out;
  }

  synchronized Map<String, Long> errors() {
    return Map.copyOf(errors);
  }

  Map<String, Long> losses() {
    Map<String, Long> out = new TreeMap<>();
    losses.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  synchronized PauseStats pauses() {
    return pauses;
  }

  synchronized int threadCount() {
    return threads.size();
  }
}
