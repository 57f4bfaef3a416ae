package dev.polystack.otel.otlp;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.TargetInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * Streams profiles: the sampling side {@link #offer}s the samples of each export interval and
 * never waits; one daemon thread maps and sends them in order. A full queue (a Collector that is
 * down or slow while retries run) drops the interval and counts its samples, so the exporter can
 * lose data but never stall sampling.
 */
public final class ProfileExporter implements AutoCloseable {
  /** Intervals waiting to be sent; at the default 10 s interval that is a minute of backlog. */
  public static final int DEFAULT_QUEUE = 6;
  private static final int MAX_MESSAGES = 5;

  /**
   * What the exporter did.
   *
   * @param requests requests sent and accepted (possibly in part)
   * @param samplesSent samples in those requests
   * @param requestsFailed requests the receiver refused or that could not be delivered
   * @param samplesDropped samples that did not reach the receiver: queue full, failed requests,
   *     intervals still queued at shutdown
   * @param rejected profiles a receiver reported as rejected in partial_success
   * @param messages the distinct messages of failures and partial successes (the first few)
   */
  public record Stats(long requests, long samplesSent, long requestsFailed, long samplesDropped,
      long rejected, List<String> messages) {
    public Stats {
      messages = List.copyOf(messages);
    }

    /** Everything handed over reached the receiver whole. */
    public boolean ok() {
      return requestsFailed == 0 && samplesDropped == 0 && rejected == 0;
    }
  }

  private final ProfilesSender sender;
  private final Function<TargetInfo, OtlpResource> resources;
  private final BlockingQueue<Object> queue;
  private final Thread worker;
  private final AtomicLong requests = new AtomicLong();
  private final AtomicLong samplesSent = new AtomicLong();
  private final AtomicLong requestsFailed = new AtomicLong();
  private final AtomicLong samplesDropped = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  private final Set<String> messages = new LinkedHashSet<>();
  private final Object end = new Object();
  private volatile boolean closed;

  /**
   * @param sender where requests go
   * @param resources the resource of a target (called on the exporter's thread)
   * @param queueCapacity intervals that may wait while one is being sent
   */
  public ProfileExporter(ProfilesSender sender, Function<TargetInfo, OtlpResource> resources,
      int queueCapacity) {
    this.sender = Objects.requireNonNull(sender, "sender");
    this.resources = Objects.requireNonNull(resources, "resources");
    if (queueCapacity < 1) {
      throw new IllegalArgumentException("export queue capacity must be >= 1");
    }
    this.queue = new ArrayBlockingQueue<>(queueCapacity + 1); // + room for the end marker
    this.worker = new Thread(this::run, "polystack-otlp-profiles");
    worker.setDaemon(true);
    worker.start();
  }

  /** Hands over one interval; never blocks. False when it was dropped (queue full, closed). */
  public boolean offer(Recording interval) {
    if (interval.samples().isEmpty()) {
      return true; // a Collector acknowledges an empty request and forwards nothing
    }
    if (closed || queue.remainingCapacity() <= 1 || !queue.offer(interval)) {
      samplesDropped.addAndGet(Sample.count(interval.samples()));
      message("export queue full: samples dropped (the receiver at " + sender.target()
          + " is slower than sampling)");
      return false;
    }
    return true;
  }

  /**
   * Hands over one interval of several processes, sent as one request; never blocks. False when
   * it was dropped (queue full, closed).
   */
  public boolean offer(ProfileBatch batch) {
    if (batch.parts().isEmpty()) {
      return true;
    }
    if (closed || queue.remainingCapacity() <= 1 || !queue.offer(batch)) {
      samplesDropped.addAndGet(batch.samples());
      message("export queue full: samples dropped (the receiver at " + sender.target()
          + " is slower than sampling)");
      return false;
    }
    return true;
  }

  private void run() {
    while (true) {
      Object item;
      try {
        item = queue.take();
      } catch (InterruptedException e) {
        break;
      }
      if (item == end) {
        break;
      }
      if (item instanceof ProfileBatch b) {
        send(b);
      } else {
        send((Recording) item);
      }
    }
    // Interrupted at shutdown: what is still queued was never sent.
    for (Object item : queue) {
      if (item instanceof Recording r) {
        samplesDropped.addAndGet(Sample.count(r.samples()));
      } else if (item instanceof ProfileBatch b) {
        samplesDropped.addAndGet(b.samples());
      }
    }
  }

  private void send(Recording interval) {
    ExportResult result;
    try {
      result = sender.export(ProfilesMapper.toRequest(interval,
          resources.apply(interval.target())));
    } catch (RuntimeException e) {
      // A bug in mapping must cost this interval only, not the rest of the session.
      result = ExportResult.failure("cannot build the request: " + e, 1);
    }
    tally(result, Sample.count(interval.samples()));
  }

  private void send(ProfileBatch batch) {
    ExportResult result;
    try {
      result = sender.export(ProfilesMapper.toRequest(batch.parts()));
    } catch (RuntimeException e) {
      result = ExportResult.failure("cannot build the request: " + e, 1);
    }
    tally(result, batch.samples());
  }

  private void tally(ExportResult result, long samples) {
    if (result.accepted()) {
      requests.incrementAndGet();
      samplesSent.addAndGet(samples);
      rejected.addAndGet(result.rejected());
      if (!result.message().isEmpty() || result.rejected() > 0) {
        message("partial success from " + sender.target() + ": " + result.rejected()
            + " profile(s) rejected" + (result.message().isEmpty() ? ""
            : ": " + result.message()));
      }
    } else {
      requestsFailed.incrementAndGet();
      samplesDropped.addAndGet(samples);
      message(result.message());
    }
  }

  private void message(String m) {
    synchronized (messages) {
      if (messages.size() < MAX_MESSAGES) {
        messages.add(m);
      }
    }
  }

  /** Where requests go, for messages. */
  public String target() {
    return sender.target();
  }

  public Stats stats() {
    List<String> m;
    synchronized (messages) {
      m = new ArrayList<>(messages);
    }
    return new Stats(requests.get(), samplesSent.get(), requestsFailed.get(),
        samplesDropped.get(), rejected.get(), m);
  }

  /**
   * Sends what is queued, waiting at most {@code timeout}; what is still unsent then is
   * dropped and counted. Closes the sender.
   */
  public Stats close(Duration timeout) {
    if (!closed) {
      closed = true;
      queue.offer(end);
      try {
        worker.join(Math.max(1, timeout.toMillis()));
        if (worker.isAlive()) {
          worker.interrupt();
          worker.join(TimeUnit.SECONDS.toMillis(2));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      sender.close();
    }
    return stats();
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(30));
  }
}
