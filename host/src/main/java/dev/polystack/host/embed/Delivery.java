package dev.polystack.host.embed;

import java.util.ArrayDeque;
import java.util.function.Consumer;

/**
 * The listener's side of a session: a bounded queue of intervals and the one thread that hands
 * them to the listener, so a slow listener costs at most {@code capacity} intervals of memory
 * and counted drops, never a stalled capture. A listener that throws is counted, reported once,
 * and called again for the next interval.
 */
final class Delivery {
  private final IntervalListener listener;
  private final Consumer<String> warnings;
  private final int capacity;
  private final ArrayDeque<ProfileInterval> queue = new ArrayDeque<>();
  private final Thread thread;
  private boolean ended;
  private boolean abandoned;
  private long delivered;
  private long dropped;
  private long samplesDropped;
  private long failures;

  Delivery(IntervalListener listener, int capacity, Consumer<String> warnings) {
    this.listener = listener;
    this.capacity = capacity;
    this.warnings = warnings;
    this.thread = new Thread(this::run, "polystack-embed-listener");
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** Whether the caller is the listener's thread (a listener that stops its own session). */
  boolean onListenerThread() {
    return Thread.currentThread() == thread;
  }

  /**
   * Queues {@code interval}; when the queue is full, waits for room until {@code deadlineNanos}
   * ({@link System#nanoTime()}; 0: no wait) and otherwise drops it, counted.
   */
  synchronized void offer(ProfileInterval interval, long deadlineNanos) {
    while (queue.size() >= capacity && !abandoned) {
      long left = deadlineNanos == 0 ? 0 : deadlineNanos - System.nanoTime();
      if (left <= 0) {
        break;
      }
      try {
        wait(Math.max(1, left / 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    if (queue.size() >= capacity || abandoned) {
      drop(interval);
      return;
    }
    queue.add(interval);
    notifyAll();
  }

  /** No interval follows: the thread ends once the queue is empty. */
  synchronized void endOfInput() {
    ended = true;
    notifyAll();
  }

  /**
   * Waits until the listener has had every queued interval, or {@code deadlineNanos}; past it,
   * what is still queued is dropped (counted) and the thread left to end on its own.
   */
  void awaitDelivered(long deadlineNanos) {
    if (onListenerThread()) {
      return; // the listener gets what is queued once it returns
    }
    try {
      long left = deadlineNanos - System.nanoTime();
      if (left > 0) {
        thread.join(Math.max(1, left / 1_000_000));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (this) {
      if (thread.isAlive()) {
        abandoned = true;
        ended = true;
        while (!queue.isEmpty()) {
          drop(queue.poll());
        }
        notifyAll();
      }
    }
  }

  synchronized long delivered() {
    return delivered;
  }

  synchronized long dropped() {
    return dropped;
  }

  synchronized long samplesDropped() {
    return samplesDropped;
  }

  synchronized long failures() {
    return failures;
  }

  private void drop(ProfileInterval interval) {
    dropped++;
    samplesDropped += interval.samples();
  }

  private synchronized ProfileInterval take() throws InterruptedException {
    while (queue.isEmpty() && !ended) {
      wait();
    }
    ProfileInterval next = queue.poll();
    notifyAll(); // room for the pipeline's next offer
    return next;
  }

  private void run() {
    try {
      ProfileInterval next;
      while ((next = take()) != null) {
        Throwable thrown = call(next);
        synchronized (this) {
          delivered++;
          if (thrown != null && ++failures == 1) {
            report(thrown);
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Calls the listener; what it threw, or null. */
  private Throwable call(ProfileInterval interval) {
    try {
      listener.onInterval(interval);
      return null;
    } catch (VirtualMachineError e) {
      if (e instanceof StackOverflowError) {
        return e;
      }
      throw e; // out of memory is not the listener's to survive
    } catch (Throwable t) {
      return t;
    }
  }

  private void report(Throwable t) {
    String message = t.getMessage() == null ? "" : ": " + t.getMessage().lines().findFirst()
        .orElse("");
    warnings.accept("the interval listener threw " + t.getClass().getName() + message
        + " (counted as listenerFailures; the session goes on, further failures are not"
        + " shown)");
  }
}
