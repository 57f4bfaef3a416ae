package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.ProcessEvent;
import dev.polystack.host.bpf.TickCapture;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * One {@link TickCapture} for every process of a record of several: one program runs at each
 * tick whatever the number of processes (its targets map holds them all), and one thread reads
 * the ring and hands each record to its process's queue, where that process's sampler polls it.
 */
public final class SharedCapture implements AutoCloseable {
  /** Records a process's queue holds; beyond, they count as its bpf_ring_full losses. */
  static final int QUEUE_RECORDS = 2048;
  /** How long the reader waits on an empty ring (the kernel wakes it early when it fills). */
  static final int POLL_MILLIS = 10;

  private final TickCapture capture;
  private final Map<Integer, Share> shares = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicLong malformed = new AtomicLong();
  private final Thread reader;

  public SharedCapture(TickCapture capture) {
    this.capture = capture;
    this.reader = new Thread(this::read, "polystack-capture-reader");
    reader.setDaemon(true);
    reader.start();
  }

  /** A share for one session: records reach it once it adds its process as a target. */
  public CaptureSource share() {
    return new Share();
  }

  /** Forgets {@code pid}'s share once its session ended (its queue's memory goes with it). */
  public void release(int pid) {
    shares.remove(pid);
  }

  /** Records that did not parse, so far. */
  public long malformed() {
    return malformed.get();
  }

  /** The kernel's counters for every process together. */
  public Map<String, Long> counters() {
    return capture.counters();
  }

  private void read() {
    while (!closed.get()) {
      try {
        capture.poll(POLL_MILLIS, bytes -> {
          if (ProcessEvent.isEvent(bytes)) {
            return; // a followed process's events: a record of chosen processes asks for none
          }
          CaptureRecord r;
          try {
            r = CaptureRecord.parse(bytes);
          } catch (IllegalArgumentException e) {
            malformed.incrementAndGet();
            return;
          }
          Share s = shares.get(r.tgid());
          if (s == null || !s.queue.offer(r)) {
            if (s != null) {
              s.dropped.incrementAndGet();
            } // else an ended process's last ticks
          }
        });
      } catch (RuntimeException e) {
        if (closed.get()) {
          return;
        }
        malformed.incrementAndGet(); // a failed read: counted, and the next poll tries again
      }
    }
  }

  @Override
  public void close() {
    closed.set(true);
    try {
      reader.join(1000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    capture.close();
  }

  /** One process's view of the capture. */
  private final class Share implements CaptureSource {
    final BlockingQueue<CaptureRecord> queue = new ArrayBlockingQueue<>(QUEUE_RECORDS);
    final AtomicLong dropped = new AtomicLong();

    @Override
    public void addTarget(int pid, int stackBytes) {
      shares.put(pid, this);
      capture.addTarget(pid, stackBytes);
    }

    @Override
    public void removeTarget(int pid) {
      capture.removeTarget(pid);
    }

    @Override
    public void clearPlans(int pid) {
      capture.clearPlans(pid);
    }

    @Override
    public void setPlan(int pid, int index, byte[] encodedPlan) {
      capture.setPlan(pid, index, encodedPlan);
    }

    @Override
    public void poll(int timeoutMillis, Consumer<CaptureRecord> records, Runnable bad) {
      CaptureRecord first;
      try {
        first = timeoutMillis <= 0 ? queue.poll()
            : queue.poll(timeoutMillis, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (first == null) {
        return;
      }
      records.accept(first);
      List<CaptureRecord> rest = new ArrayList<>();
      queue.drainTo(rest);
      rest.forEach(records);
    }

    /** Only this process's queue overflows: the kernel's own counters are the run's. */
    @Override
    public Map<String, Long> counters() {
      return Map.of("ring_full", dropped.get());
    }
  }
}
