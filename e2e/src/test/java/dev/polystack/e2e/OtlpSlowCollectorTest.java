package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An OTLP receiver that is slow (seconds per request) or failing (503 Service Unavailable, the
 * OTLP/HTTP "retry later" answer, after a delay) during a {@code record --export-interval 1s}:
 * sampling must not suffer, and every interval that does not get through must be counted and
 * reported, with exit code 1. (OtlpCollectorTest covers a Collector that is down and one that
 * refuses a request.) The receiver is a JDK HttpServer in this test, standing in for a
 * Collector under load. Three records run side by side under the same machine load, each
 * against its own sleeping target with {@code --idle} (so the achievable sample count is rate x
 * duration whatever the CPU does): one without OTLP, one to the slow and one to the failing
 * receiver; the OTLP runs' sample counts are compared with the plain run's as ratios.
 *
 * <p>{@code -Dreliability.otlpSeconds} sets the record duration (default 20).
 */
class OtlpSlowCollectorTest {
  private static final Pattern TAKEN = Pattern.compile("polystack: (\\d+) samples? from");
  private static final Pattern SENT = Pattern.compile("OTLP: sent (\\d+) samples in (\\d+)");
  private static final Pattern DROPPED = Pattern.compile("(\\d+) samples dropped, (\\d+) request");
  /** The slow receiver's delay before answering 200. */
  static final int SLOW_MS = 3000;
  /** The failing receiver's delay before answering 503. */
  static final int FAILING_MS = 1500;
  /** The smallest acceptable ratio of an OTLP run's samples to the plain run's. */
  static final double MIN_RATIO = 0.8;

  @TempDir Path dir;

  /** A receiver answering every request after {@code delayMs} with {@code status}. */
  private static final class Receiver implements AutoCloseable {
    final HttpServer server;
    final ExecutorService pool = Executors.newCachedThreadPool();
    final Map<String, AtomicLong> requests = new ConcurrentHashMap<>();
    /** Samples in the profile requests this receiver decoded (the official proto classes). */
    final AtomicLong decodedSamples = new AtomicLong();
    /** A profile request that did not decode, if any. */
    final AtomicReference<Exception> undecodable = new AtomicReference<>();

    final int status;

    Receiver(int delayMs, int status) throws IOException {
      this.status = status;
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      server.setExecutor(pool);
      server.createContext("/", exchange -> {
        try (exchange; InputStream in = exchange.getRequestBody()) {
          byte[] body = in.readAllBytes();
          String path = exchange.getRequestURI().getPath();
          requests.computeIfAbsent(path, k -> new AtomicLong()).incrementAndGet();
          if (path.equals("/v1development/profiles")) {
            try {
              if ("gzip".equalsIgnoreCase(
                  exchange.getRequestHeaders().getFirst("Content-Encoding"))) {
                try (InputStream unzipped = new GZIPInputStream(new ByteArrayInputStream(body))) {
                  body = unzipped.readAllBytes();
                }
              }
              decodedSamples.addAndGet(Collector.sampleCount(
                  List.of(ExportProfilesServiceRequest.parseFrom(body))));
            } catch (IOException e) {
              undecodable.set(e);
            }
          }
          Thread.sleep(delayMs);
          exchange.getResponseHeaders().set("Content-Type", "application/x-protobuf");
          // 200: an empty Export*ServiceResponse (full success); 503: an empty body.
          exchange.sendResponseHeaders(status, -1);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      server.start();
    }

    String endpoint() {
      return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @Override
    public void close() {
      server.stop(0);
      pool.shutdownNow();
    }
  }

  @Test
  void aSlowOrFailingReceiverCostsNoSamplesAndEveryDropIsCounted() throws Exception {
    int seconds = Reliability.intProperty("reliability.otlpSeconds", 20);
    try (Receiver slow = new Receiver(SLOW_MS, 200);
        Receiver failing = new Receiver(FAILING_MS, 503);
        Target plainTarget = Target.start(Path.of("/bin/sleep"), "600");
        Target slowTarget = Target.start(Path.of("/bin/sleep"), "600");
        Target failingTarget = Target.start(Path.of("/bin/sleep"), "600")) {
      ExecutorService runs = Executors.newFixedThreadPool(3);
      List<Future<Distribution.Result>> results = new ArrayList<>();
      try {
        results.add(runs.submit(() -> record(plainTarget, seconds, null)));
        results.add(runs.submit(() -> record(slowTarget, seconds, slow.endpoint())));
        results.add(runs.submit(() -> record(failingTarget, seconds, failing.endpoint())));
        Distribution.Result plain = results.get(0).get();
        Distribution.Result slowRun = results.get(1).get();
        Distribution.Result failingRun = results.get(2).get();

        assertEquals(0, plain.exitCode(), plain.stderr());
        long base = taken(plain);
        String report = String.format("seconds=%d plain_samples=%d slow{%s} failing{%s}",
            seconds, base, check("slow", slowRun, base, slow),
            check("failing", failingRun, base, failing));
        Reliability.report("otlp-slow-failing", report);
      } finally {
        runs.shutdownNow();
      }
      for (Target t : List.of(plainTarget, slowTarget, failingTarget)) {
        Target.Status s = t.status();
        assertTrue(t.isAlive() && s != null && s.tracerPid() == 0 && !s.stopped(),
            "target left " + s);
      }
    }
  }

  private Distribution.Result record(Target target, int seconds, String endpoint)
      throws Exception {
    List<String> args = new ArrayList<>(List.of("record", "--pid",
        Integer.toString(target.pid()), "--idle", "--duration", seconds + "s", "--format",
        "folded", "-o", dir.resolve("t" + target.pid() + ".folded").toString()));
    if (endpoint != null) {
      args.addAll(List.of("--otlp-endpoint", endpoint, "--otlp-protocol", "http/protobuf",
          "--export-interval", "1s"));
    }
    return Distribution.run(args.toArray(String[]::new));
  }

  /** Exit 1, one last line naming the drops, the accounting adds up, samples kept up. */
  private static String check(String name, Distribution.Result r, long base, Receiver receiver) {
    assertEquals(1, r.exitCode(), name + ": " + r.stderr());
    long taken = taken(r);
    double ratio = (double) taken / base;
    assertTrue(ratio >= MIN_RATIO, name + ": " + taken + " samples vs " + base
        + " without OTLP (ratio " + ratio + ")");
    List<String> lines = r.stderrLines();
    String last = lines.get(lines.size() - 1);
    assertTrue(last.startsWith("polystack: OTLP export to " + receiver.endpoint()), last);
    Matcher dropped = DROPPED.matcher(last);
    assertTrue(dropped.find(), last);
    Matcher sent = SENT.matcher(r.stderr());
    assertTrue(sent.find(), r.stderr());
    long sentSamples = Long.parseLong(sent.group(1));
    long droppedSamples = Long.parseLong(dropped.group(1));
    assertTrue(droppedSamples > 0, last);
    // Every sample taken either reached the receiver or is counted as dropped.
    assertEquals(taken, sentSamples + droppedSamples, name + ": " + r.stderr());
    // What the receiver decoded holds every sample polystack counts as sent (more where an
    // answer came too late, or a 503 was retried: those count as dropped, or are sent again).
    assertEquals(null, receiver.undecodable.get(), name + ": a request did not decode");
    long decoded = receiver.decodedSamples.get();
    assertTrue(decoded >= sentSamples, name + ": the receiver decoded " + decoded
        + " samples; polystack counts " + sentSamples + " as sent");
    assertTrue(receiver.status != 200 || sentSamples > 0, name + ": nothing got through");
    return String.format("exit=%d samples=%d ratio=%.3f sent=%d dropped=%d decoded=%d"
        + " requests=%s", r.exitCode(), taken, ratio, sentSamples, droppedSamples, decoded,
        receiver.requests);
  }

  private static long taken(Distribution.Result r) {
    Matcher m = TAKEN.matcher(r.stderr());
    assertTrue(m.find(), r.stderr());
    return Long.parseLong(m.group(1));
  }
}
