package dev.polystack.host.session;

import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.process.ModuleTable;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.RawFrame;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.host.sampling.ThreadSample;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.ValueType;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.SampleAttributes;
import dev.polystack.plugin.api.SampleType;
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
 * counters. For the ptrace loop it runs on its own thread behind a bounded queue so the loop
 * never waits (a full queue drops the sample and counts it); the loops that never stop the
 * target run it inline.
 *
 * <p>Samples of one stack are common, so the named stack is cached by the raw frames and the
 * module table they were named against: a repeat costs one hash lookup, not a symbol lookup per
 * frame and a hash of every named frame. Samples are held in bounded memory ({@link
 * SampleStore}): for the final recording unless only streamed, and per export interval when
 * streamed; a run that only streams lets its interned stacks go at every interval too.
 */
public final class SampleProcessor implements SampleSink, AutoCloseable {
  static final int QUEUE_CAPACITY = 1 << 14;
  static final long THREAD_NAME_TTL_NANOS = 2_000_000_000L;
  /** Named stacks cached by raw stack, least recently used evicted. */
  static final int MAX_CACHED_STACKS = 1 << 14;
  /** Distinct plug-in value maps interned (a plug-in reports few: a flag, a small count). */
  static final int MAX_VALUE_MAPS = 1 << 10;
  /** Samples a recording keeps with their times (about 24 MiB); later ones are merged. */
  static final int MAX_TIMED_SAMPLES = 1 << 20;
  /** Merged entries (thread and stack pairs) a recording keeps beyond those. */
  static final int MAX_MERGED_ENTRIES = 1 << 18;

  private record Named(String name, long readAt) {}

  /** Queued by {@link #close}: everything before it is processed, then the thread ends. */
  private static final ThreadSample END =
      new ThreadSample(0, 0, new RawStack(List.of(), List.of()), 0, 1);

  /** A distinct named stack and the attributes its samples carry; identity is what counts. */
  private static final class NamedStack implements SampleStore.Shape {
    private final StackTrace stack;
    private final Map<String, Object> attributes;

    NamedStack(StackTrace stack, SampleAttributes attributes) {
      this.stack = stack;
      this.attributes = attributes.asMap();
    }

    @Override
    public StackTrace stack() {
      return stack;
    }

    @Override
    public Map<String, Object> attributes() {
      return attributes;
    }
  }

  /**
   * Raw frames as walked, the sample attributes the walks gave, and the module table the native
   * PCs are named against.
   */
  private record RawKey(List<RawFrame> frames, SampleAttributes attributes, ModuleTable table) {
    // Written out (see RawFrame.Native); the table by identity, which is its generation.
    @Override
    public boolean equals(Object o) {
      return o instanceof RawKey k && k.table == table && k.frames.equals(frames)
          && k.attributes.equals(attributes);
    }

    @Override
    public int hashCode() {
      return (frames.hashCode() * 31 + attributes.hashCode()) * 31
          + System.identityHashCode(table);
    }
  }

  /** A named stack's frames and its samples' attributes. */
  private record ShapeKey(List<Frame> frames, SampleAttributes attributes) {}

  private final TargetProcess target;
  private final ProcFs proc;
  /** Null inline: the agent holds a processor per process, and 64 KiB each adds up. */
  private final BlockingQueue<ThreadSample> queue;
  private final Map<String, LongAdder> losses = new ConcurrentHashMap<>();
  private final Thread thread;
  private final FrameNamer namer = new FrameNamer();
  /** Interned stacks: equal frames give the same StackTrace, which outputs count by identity. */
  private final Map<List<Frame>, StackTrace> traces = new HashMap<>();
  private final Map<ShapeKey, NamedStack> stacks = new HashMap<>();
  private final Map<RawKey, NamedStack> byRaw =
      BoundedMap.leastRecentlyUsed(MAX_CACHED_STACKS);
  private final Map<Integer, Named> threadNames = new HashMap<>();
  private final Map<SampleType, ValueType> valueTypes = new HashMap<>();
  /** Distinct plug-in value maps, so the store keeps one reference per sample (bounded). */
  private final Map<Map<ValueType, Long>, Map<ValueType, Long>> valueMaps =
      BoundedMap.leastRecentlyUsed(MAX_VALUE_MAPS);
  /** For the final recording; null when samples are only streamed. */
  private SampleStore kept = new SampleStore(MAX_TIMED_SAMPLES, MAX_MERGED_ENTRIES);
  /** Since the last {@link #takeNew}; null unless streamed. */
  private SampleStore pending;
  private final java.util.Set<Integer> threads = new java.util.HashSet<>();
  private final PauseStats pauses = new PauseStats();
  private final Map<String, Long> errors = new TreeMap<>();
  private volatile boolean closing;
  private volatile long processed;
  /** The sampling periods the processed samples stand for (see {@link ThreadSample#periods}). */
  private volatile long periods;

  /**
   * @param inline process each sample on the caller's thread: for loops that never stop the
   *     target (bpf, perf), whose kernel rings hold what arrives meanwhile, a queue and a thread
   *     would only add a wake-up and a context switch per sample. The ptrace loop must get back
   *     to its ticks, so it hands samples to a thread of their own.
   */
  /**
   * A processor for a host-wide pipeline: samples processed on the caller's thread and held
   * only until the next {@link #takeNew}.
   */
  public static SampleProcessor forIntervals(TargetProcess target, ProcFs proc) {
    SampleProcessor p = new SampleProcessor(target, proc, true);
    p.holdSamples(false, true);
    return p;
  }

  SampleProcessor(TargetProcess target, ProcFs proc, boolean inline) {
    this.target = target;
    this.proc = proc;
    if (inline) {
      this.queue = null;
      this.thread = null;
    } else {
      this.queue = new ArrayBlockingQueue<>(QUEUE_CAPACITY);
      this.thread = new Thread(this::run, "polystack-samples-" + target.pid());
      thread.setDaemon(true);
      thread.start();
    }
  }

  @Override
  public void accept(ThreadSample sample) {
    if (thread == null) {
      process(sample);
    } else if (!queue.offer(sample)) {
      lost(HostCounters.QUEUE_FULL);
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
    boolean ending = false;
    while (true) {
      ThreadSample s;
      try {
        // Woken by a sample or by close(): no periodic wake-ups while the target is idle.
        s = ending ? queue.poll() : queue.take();
      } catch (InterruptedException e) {
        continue;
      }
      if (s == null) {
        return; // ending, and everything queued is processed
      }
      if (s == END) {
        ending = true;
        continue;
      }
      process(s);
    }
  }

  private synchronized void process(ThreadSample s) {
    NamedStack stack = named(s.stack());
    String name = threadName(s.tid());
    Map<ValueType, Long> values = pluginValues(s.stack());
    boolean held = true;
    if (kept != null) {
      held = kept.add(s.tid(), name, s.epochNanos(), stack, s.periods(), values);
    }
    if (pending != null) {
      held &= pending.add(s.tid(), name, s.epochNanos(), stack, s.periods(), values);
    }
    if (!held) {
      lost(HostCounters.SAMPLE_STORE_FULL);
    }
    threads.add(s.tid());
    pauses.add(s.pauseNanos());
    for (String reason : s.stack().errors()) {
      errors.merge(reason, 1L, Long::sum);
    }
    processed++;
    periods += s.periods();
  }

  /** What plug-ins measured of a sample, by the model's value types (interned). */
  private Map<ValueType, Long> pluginValues(RawStack raw) {
    if (raw.values().isEmpty()) {
      return Map.of();
    }
    Map<ValueType, Long> out = new HashMap<>();
    raw.values().forEach((type, v) -> out.put(valueTypes.computeIfAbsent(type,
        t -> new ValueType(t.name(), t.unit())), v));
    Map<ValueType, Long> copy = Map.copyOf(out);
    return valueMaps.computeIfAbsent(copy, k -> k);
  }

  /** The named, interned stack of a raw one: cached, named only on the first sample of it. */
  private NamedStack named(RawStack raw) {
    ModuleTable table = target.table();
    RawKey key = new RawKey(raw.frames(), raw.attributes(), table);
    NamedStack named = byRaw.get(key);
    if (named == null) {
      List<Frame> frames = namer.name(raw, table);
      named = stacks.computeIfAbsent(new ShapeKey(frames, raw.attributes()), k -> new NamedStack(
          traces.computeIfAbsent(k.frames(), StackTrace::new), k.attributes()));
      byRaw.put(key, named);
    }
    return named;
  }

  private String threadName(int tid) {
    long now = System.nanoTime();
    Named named = threadNames.get(tid);
    if (named == null || now - named.readAt() > THREAD_NAME_TTL_NANOS) {
      String name = named == null ? "" : named.name();
      try {
        String read = proc.forPid(target.pid()).threadName(tid);
        name = read.equals(name) ? name : read; // the same String while the name stays
      } catch (ProcReadException e) {
        // The thread is gone; keep the last name we knew.
      }
      named = new Named(name, now);
      threadNames.put(tid, named);
    }
    return named.name();
  }

  public long processed() {
    return processed;
  }

  public long periods() {
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
    if (closing || thread == null) {
      closing = true;
      return;
    }
    closing = true;
    try {
      queue.put(END); // behind every sample queued so far
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    try {
      thread.join(TimeUnit.SECONDS.toMillis(30));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The samples kept for the final recording (none when they were only streamed). */
  synchronized List<Sample> samples() {
    return kept == null ? List.of() : kept.samples();
  }

  /**
   * Which samples to hold: with {@code keep}, every sample for the final recording (the
   * default); with {@code stream}, those since the last {@link #takeNew}, for streaming by
   * interval. A run that only streams then holds one interval in memory, not the session.
   * Called before the first sample.
   */
  synchronized void holdSamples(boolean keep, boolean stream) {
    this.kept = keep ? new SampleStore(MAX_TIMED_SAMPLES, MAX_MERGED_ENTRIES) : null;
    this.pending = stream ? new SampleStore(MAX_TIMED_SAMPLES, MAX_MERGED_ENTRIES) : null;
  }

  /** The samples processed since the previous call, for streaming by interval. */
  public synchronized List<Sample> takeNew() {
    if (pending == null) {
      return List.of();
    }
    List<Sample> out = pending.samples();
    pending.clear();
    if (kept == null) {
      // Nothing outlives the interval: the next one interns its stacks afresh.
      stacks.clear();
      byRaw.clear();
    }
    return out;
  }

  /** Samples merged without their times because a store held its bound of timed ones. */
  public synchronized long mergedSamples() {
    return (kept == null ? 0 : kept.mergedSamples())
        + (pending == null ? 0 : pending.mergedSamples());
  }

  public synchronized Map<String, Long> errors() {
    return Map.copyOf(errors);
  }

  public Map<String, Long> losses() {
    Map<String, Long> out = new TreeMap<>();
    losses.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  synchronized PauseStats pauses() {
    return pauses;
  }

  public synchronized int threadCount() {
    return threads.size();
  }
}
