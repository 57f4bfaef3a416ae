package dev.polystack.otel.local;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Collapsed stacks ({@code root;caller;leaf COUNT} per line), the input of flamegraph.pl.
 * Threads are merged unless asked for: the format has no place for them, and a per-thread root
 * frame changes the root of every consumer's graph. A recording of several processes (its samples
 * carry {@code process.pid}) starts
 * each stack with its process, {@code process PID (NAME)}, as py-spy and perf script users know.
 */
final class FoldedWriter implements ProfileWriter {
  private final boolean threadRoots;

  /** @param threadRoots start each stack with its thread, {@code name (tid N)} */
  FoldedWriter(boolean threadRoots) {
    this.threadRoots = threadRoots;
  }

  @Override
  public void write(Recording recording, OutputStream out) throws IOException {
    Stacks stacks = new Stacks(recording);
    // Sorted by the line text, so equal recordings give byte-equal files. Distinct stacks are
    // few next to samples, so lines are built once per stack, not once per sample.
    Map<String, Long> counts = new TreeMap<>();
    boolean processRoots = Stacks.namesProcesses(recording);
    Map<String, List<Sample>> byRoot = new TreeMap<>();
    Map<Integer, String> names = threadRoots ? Stacks.threadNames(recording) : Map.of();
    for (Sample sample : recording.samples()) {
      StringBuilder root = new StringBuilder();
      if (processRoots) {
        root.append(clean(Stacks.processLabel(sample))).append(';');
      }
      if (threadRoots) {
        root.append(clean(Stacks.threadLabel(sample.tid(),
            names.getOrDefault(sample.tid(), "")))).append(';');
      }
      byRoot.computeIfAbsent(root.toString(), r -> new ArrayList<>()).add(sample);
    }
    byRoot.forEach((root, samples) -> {
      for (Stacks.Counted c : Stacks.countByStack(samples, recording::weight)) {
        counts.merge(root + line(stacks.rootFirstLabels(c.stack())), c.count(), Long::sum);
      }
    });
    Writer w = new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8));
    for (Map.Entry<String, Long> e : counts.entrySet()) {
      w.write(e.getKey());
      w.write(' ');
      w.write(Long.toString(e.getValue()));
      w.write('\n');
    }
    w.flush();
  }

  private static String line(List<String> labels) {
    StringBuilder sb = new StringBuilder();
    for (String label : labels) {
      if (sb.length() > 0) {
        sb.append(';');
      }
      sb.append(clean(label));
    }
    return sb.toString();
  }

  /**
   * Makes a label safe for the format: ';' separates frames and a line break ends the record.
   * Spaces may stay: parsers take the count from after the last space only.
   */
  static String clean(String label) {
    StringBuilder sb = new StringBuilder(label.length());
    for (int i = 0; i < label.length(); i++) {
      char c = label.charAt(i);
      sb.append(c == ';' ? ':' : c == '\n' || c == '\r' ? ' ' : c);
    }
    return sb.toString();
  }
}
