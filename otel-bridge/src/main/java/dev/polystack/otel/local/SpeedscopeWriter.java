package dev.polystack.otel.local;

import dev.polystack.otel.model.FrameLabels;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.plugin.api.Frame;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The speedscope file format (https://www.speedscope.app/file-format-schema.json): one sampled
 * profile per thread, in sample order so speedscope's time-order view shows the session as it
 * happened, over one shared frame table.
 */
final class SpeedscopeWriter implements ProfileWriter {
  static final String SCHEMA = "https://www.speedscope.app/file-format-schema.json";

  /** One entry of the shared frame table; speedscope merges frames with equal fields. */
  private record FrameKey(String name, String file, int line) {}

  @Override
  public void write(Recording recording, OutputStream out) throws IOException {
    Map<FrameKey, Integer> frames = new LinkedHashMap<>();
    Map<StackTrace, int[]> rootFirst = new IdentityHashMap<>();
    Map<Integer, List<Sample>> samplesByThread = new HashMap<>();
    for (Sample sample : recording.samples()) {
      rootFirst.computeIfAbsent(sample.stack(), s -> indices(s, recording, frames));
      samplesByThread.computeIfAbsent(sample.tid(), t -> new ArrayList<>()).add(sample);
    }

    Writer w = new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8));
    StringBuilder sb = new StringBuilder(256);
    w.write("{\"$schema\":");
    w.write(Json.string(SCHEMA));
    w.write(",\n\"shared\":{\"frames\":[");
    boolean first = true;
    for (FrameKey f : frames.keySet()) {
      sb.setLength(0);
      sb.append(first ? "\n" : ",\n").append("{\"name\":");
      Json.string(sb, f.name());
      if (!f.file().isEmpty()) {
        Json.string(sb.append(",\"file\":"), f.file());
      }
      if (f.line() > 0) {
        sb.append(",\"line\":").append(f.line());
      }
      w.write(sb.append('}').toString());
      first = false;
    }
    w.write("]},\n\"profiles\":[");
    long period = recording.periodNanos();
    boolean several = Stacks.namesProcesses(recording);
    first = true;
    for (Map.Entry<Integer, String> thread : Stacks.threadNames(recording).entrySet()) {
      List<Sample> samples = samplesByThread.get(thread.getKey());
      w.write(first ? "\n{\"type\":\"sampled\",\"name\":" : ",\n{\"type\":\"sampled\",\"name\":");
      String label = Stacks.threadLabel(thread.getKey(), thread.getValue());
      // Several processes: each thread's profile says whose it is.
      w.write(Json.string(several ? Stacks.processLabel(samples.get(0)) + ": " + label : label));
      // A sample weighs the periods it stands for, so the thread's span is their sum.
      w.write(",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":"
          + Stacks.periods(samples) * period + ",\n\"samples\":[");
      for (int i = 0; i < samples.size(); i++) {
        sb.setLength(0);
        sb.append(i == 0 ? "[" : ",[");
        int[] stack = rootFirst.get(samples.get(i).stack());
        for (int j = 0; j < stack.length; j++) {
          sb.append(j == 0 ? "" : ",").append(stack[j]);
        }
        w.write(sb.append(']').toString());
      }
      w.write("],\n\"weights\":[");
      for (int i = 0; i < samples.size(); i++) {
        long weight = samples.get(i).periods() * period;
        w.write(i == 0 ? Long.toString(weight) : "," + weight);
      }
      w.write("]}");
      first = false;
    }
    w.write("],\n\"name\":");
    w.write(Json.string(recording.target().executableName() + " (pid "
        + recording.target().pid() + ")"));
    w.write(",\"activeProfileIndex\":0,\"exporter\":");
    w.write(Json.string(Stacks.exporter()));
    w.write("}\n");
    w.flush();
  }

  private static int[] indices(StackTrace stack, Recording recording,
      Map<FrameKey, Integer> frames) {
    if (stack.frames().isEmpty()) {
      return new int[] {frameIndex(new FrameKey(Stacks.NO_FRAMES, "", 0), frames)};
    }
    int n = stack.frames().size();
    int[] indices = new int[n];
    for (int i = 0; i < n; i++) {
      indices[i] = frameIndex(key(stack.frames().get(n - 1 - i), recording), frames);
    }
    return indices;
  }

  private static int frameIndex(FrameKey key, Map<FrameKey, Integer> frames) {
    return frames.computeIfAbsent(key, k -> frames.size());
  }

  /**
   * The name is the shared label, so speedscope and the other outputs agree; file and line let
   * speedscope show where a frame is (for native frames without a source file, the module).
   */
  private static FrameKey key(Frame frame, Recording recording) {
    String file = frame.file();
    boolean machineCode = Frame.NATIVE.equals(frame.type()) || Frame.KERNEL.equals(frame.type());
    if (file.isEmpty() && machineCode) {
      file = !frame.module().isEmpty() ? frame.module()
          : recording.moduleAt(frame.address()).map(ModuleInfo::path).orElse("");
    }
    return new FrameKey(FrameLabels.label(frame, recording), file, frame.line());
  }
}
