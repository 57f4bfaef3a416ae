package com.example.profiling;

import dev.polystack.host.embed.ProcessRecording;
import dev.polystack.host.embed.ProfileInterval;
import dev.polystack.host.embed.Profiler;
import dev.polystack.host.embed.ProfilerException;
import dev.polystack.host.embed.ProfilerStats;
import dev.polystack.host.embed.ProfilingSession;
import dev.polystack.host.embed.Selection;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Profiles one process (or the whole host) for some seconds with polystack embedded, and prints
 * each interval's OTLP request size and, at the end, the samples of every process seen.
 *
 * <pre>
 * java -cp 'target/classes:target/lib/*' com.example.profiling.ProfileForSeconds SECONDS [PID]
 * </pre>
 */
public final class ProfileForSeconds {
  private ProfileForSeconds() {}

  /** Samples per process over the whole run, and the executable names; listener thread only. */
  private static final class Totals {
    final Map<Integer, Long> samples = new TreeMap<>();
    final Map<Integer, String> names = new TreeMap<>();
    long requestBytes;

    void add(ProfileInterval interval) {
      for (ProcessRecording p : interval.processes()) {
        samples.merge(p.pid(), p.samples(), Long::sum);
        names.put(p.pid(), p.executableName());
      }
      int bytes = interval.toOtlpRequest().getSerializedSize();
      requestBytes += bytes;
      System.out.printf("interval %d: %d processes, %d samples, OTLP request %d bytes%n",
          interval.sequence(), interval.processes().size(), interval.samples(), bytes);
    }
  }

  public static void main(String[] args) throws InterruptedException {
    if (args.length < 1 || args.length > 2) {
      System.err.println("usage: ProfileForSeconds SECONDS [PID]");
      System.exit(2);
    }
    int seconds = Integer.parseInt(args[0]);
    Selection selection = args.length == 2
        ? Selection.ofPids(Integer.parseInt(args[1])) : Selection.hostWide();
    Profiler profiler = Profiler.builder()
        .selection(selection)
        .rateHz(99)
        .interval(Duration.ofSeconds(1))
        .warnings(line -> System.err.println("polystack: " + line))
        .build();
    Optional<String> why = profiler.check();
    if (why.isPresent()) {
      System.err.println("cannot profile here: " + why.get());
      System.exit(1);
    }
    Totals totals = new Totals();
    ProfilerStats stats;
    try (ProfilingSession session = profiler.start(totals::add)) {
      Thread.sleep(seconds * 1000L);
      stats = session.stop(); // the last interval has been through totals::add
    } catch (ProfilerException e) {
      System.err.println(e.getMessage());
      System.exit(1);
      return;
    }
    totals.samples.forEach((pid, n) -> System.out.printf("process %d %s: %d samples%n", pid,
        totals.names.get(pid), n));
    System.out.printf("total: %d samples from %d processes, OTLP %d bytes, %d intervals"
        + " delivered, %d dropped, lost %s%n", stats.samples(), stats.processesSeen(),
        totals.requestBytes, stats.intervalsDelivered(), stats.intervalsDropped(),
        stats.losses());
  }
}
