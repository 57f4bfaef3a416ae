package dev.polystack.otel.local;

import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.model.FrameLabels;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/** What the text-label outputs (folded, html) share: labelled stacks and thread names. */
final class Stacks {
  /** Stands in for an empty stack, so its samples still count and show up. */
  static final String NO_FRAMES = "[no frames]";

  private final Recording recording;
  // The aggregator interns equal stacks, so identity finds repeats without hashing every frame.
  private final Map<StackTrace, List<String>> rootFirst = new IdentityHashMap<>();

  Stacks(Recording recording) {
    this.recording = recording;
  }

  /** The frame labels of {@code stack}, root first; {@link #NO_FRAMES} alone if it is empty. */
  List<String> rootFirstLabels(StackTrace stack) {
    return rootFirst.computeIfAbsent(stack, s -> {
      if (s.frames().isEmpty()) {
        return List.of(NO_FRAMES);
      }
      List<String> labels = new ArrayList<>(s.frames().size());
      for (int i = s.frames().size() - 1; i >= 0; i--) {
        labels.add(FrameLabels.label(s.frames().get(i), recording));
      }
      return Collections.unmodifiableList(labels);
    });
  }

  /** A distinct stack and the sampling periods its samples stand for. */
  record Counted(StackTrace stack, long count) {}

  /**
   * The periods of each distinct stack (by identity, see above) in {@code samples}, in order of
   * first occurrence: identity hash order would differ from run to run, and so would files.
   */
  static List<Counted> countByStack(List<Sample> samples) {
    return countByStack(samples, Sample::periods);
  }

  /** As {@link #countByStack(List)}, each sample weighing {@code weight}. */
  static List<Counted> countByStack(List<Sample> samples,
      java.util.function.ToLongFunction<Sample> weight) {
    return group(samples, 1, (sample, sums) -> sums[0] += weight.applyAsLong(sample)).stream()
        .map(e -> new Counted(e.getKey(), e.getValue()[0])).toList();
  }

  /**
   * Each distinct stack of {@code samples}, in first-seen order, with its values: the periods of
   * CPU samples ({@code [periods]}), or the sum of each of the recording's sample types.
   */
  static List<Map.Entry<StackTrace, long[]>> valuesByStack(Recording recording,
      List<Sample> samples) {
    int types = recording.sampleTypes().size();
    return group(samples, Math.max(1, types), (sample, sums) -> {
      if (types == 0) {
        sums[0] += sample.periods();
      } else {
        long[] values = sample.values();
        for (int i = 0; i < types; i++) {
          sums[i] += values[i];
        }
      }
    });
  }

  /**
   * Samples grouped by stack, {@code width} sums each, in first-seen order. By identity: a
   * recording shares one StackTrace per distinct stack, and a record's hash walks every frame.
   */
  private static List<Map.Entry<StackTrace, long[]>> group(List<Sample> samples, int width,
      java.util.function.BiConsumer<Sample, long[]> add) {
    Map<StackTrace, long[]> sums = new IdentityHashMap<>();
    List<Map.Entry<StackTrace, long[]>> out = new ArrayList<>();
    for (Sample sample : samples) {
      add.accept(sample, sums.computeIfAbsent(sample.stack(), k -> {
        long[] fresh = new long[width];
        out.add(Map.entry(k, fresh));
        return fresh;
      }));
    }
    return out;
  }

  /** The sampling periods {@code samples} stand for: their count, plus the ticks they carry. */
  static long periods(List<Sample> samples) {
    long n = 0;
    for (Sample sample : samples) {
      n += sample.periods();
    }
    return n;
  }

  /**
   * Each thread's name by tid, ascending. A thread may rename itself while sampled; the last
   * name wins because that is what tools like top show by the end of the session.
   */
  static SortedMap<Integer, String> threadNames(Recording recording) {
    SortedMap<Integer, String> names = new TreeMap<>();
    for (Sample sample : recording.samples()) {
      names.put(sample.tid(), sample.threadName());
    }
    return names;
  }

  /** How outputs name a thread: {@code NAME (tid N)}. */
  static String threadLabel(int tid, String name) {
    return (name.isEmpty() ? "thread" : name) + " (tid " + tid + ")";
  }

  /**
   * The tick capture's figures of a recording (bpf mode), named without their {@code capture_}
   * prefix ({@code records}, {@code ticks}, {@code plans}): what the capture did, not losses.
   */
  static Map<String, Long> captureFigures(Recording r) {
    Map<String, Long> out = new TreeMap<>();
    Counters.ofKind(r.losses(), CounterKind.CAPTURE_FIGURE).forEach((name, n) -> out.put(
        name.startsWith(Counters.CAPTURE_PREFIX)
            ? name.substring(Counters.CAPTURE_PREFIX.length()) : name, n));
    return out;
  }

  /** {@code polystack VERSION}, for the exporter fields of file formats that have one. */
  static String exporter() {
    String version = Stacks.class.getPackage().getImplementationVersion();
    return "polystack " + (version == null ? "development build" : version);
  }

  /** The sample attribute a recording of several processes names each sample's process by. */
  static final String PROCESS_PID = "process.pid";
  /** The sample attribute naming the executable of that process. */
  static final String PROCESS_NAME = "process.executable.name";

  /**
   * Whether the samples say their process: a recording of several processes (several pids,
   * or a process and what it started) names it on every sample, one of a single process never.
   */
  static boolean namesProcesses(Recording recording) {
    for (Sample sample : recording.samples()) {
      if (sample.attributes().containsKey(PROCESS_PID)) {
        return true;
      }
    }
    return false;
  }

  /** How outputs name a sample's process: {@code process PID (NAME)}. */
  static String processLabel(Sample sample) {
    Object pid = sample.attributes().get(PROCESS_PID);
    Object name = sample.attributes().get(PROCESS_NAME);
    String named = name == null ? "" : name.toString();
    return "process " + (pid == null ? "?" : pid) + (named.isEmpty() ? "" : " (" + named + ")");
  }
}
