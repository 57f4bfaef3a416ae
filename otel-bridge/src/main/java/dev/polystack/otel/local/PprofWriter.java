package dev.polystack.otel.local;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import dev.polystack.otel.model.FrameLabels;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.counters.SamplingRates;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.ValueType;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.plugin.api.Frame;
import java.io.ByteArrayOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.zip.GZIPOutputStream;

/**
 * Gzipped pprof profile.proto, encoded field by field: the schema is small and stable, and
 * generated classes for it would be a second protobuf schema to build and ship for one writer.
 *
 * <p>Frames become pprof locations the way pprof itself models them: a native frame is an
 * address in a mapping, with a line naming its symbol when there is one, so pprof shows
 * unsymbolized frames by address and can symbolize them later from the binaries; runtime frames
 * (LuaJIT) carry their function, chunk and line.
 */
final class PprofWriter implements ProfileWriter {

  @Override
  public void write(Recording recording, OutputStream out) throws IOException {
    Tables tables = new Tables(recording);
    tables.addSamples();
    // Closing the gzip stream releases its native deflater; the caller's stream stays open.
    try (GZIPOutputStream gzip = new GZIPOutputStream(new FilterOutputStream(out) {
      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
      }

      @Override
      public void close() throws IOException {
        flush();
      }
    }, 64 * 1024)) {
      CodedOutputStream coded = CodedOutputStream.newInstance(gzip);
      tables.writeTo(coded);
      coded.flush();
    }
  }

  private record FunctionKey(long name, long systemName, long filename, long startLine) {}

  private record LocationKey(long mappingId, long address, long functionId, long line) {}

  private record SampleKey(List<Long> locationIds, int tid, String threadName,
      List<Map.Entry<String, Object>> attributes) {}

  /** What pprof learns about a mapping from the frames in it. */
  private static final class MappingFacts {
    final ModuleInfo module;
    boolean hasFunctions;
    boolean hasFilenames;
    boolean hasLineNumbers;

    MappingFacts(ModuleInfo module) {
      this.module = module;
    }
  }

  /** The deduplicated tables of one profile, built once per write. */
  private static final class Tables {
    private final Recording recording;
    private final List<String> strings = new ArrayList<>();
    private final Map<String, Long> stringIndex = new HashMap<>();
    private final Map<ModuleInfo, Long> mappingIds = new HashMap<>();
    private final List<MappingFacts> mappings = new ArrayList<>();
    private final Map<FunctionKey, Long> functions = new LinkedHashMap<>();
    private final Map<LocationKey, Long> locations = new LinkedHashMap<>();
    private final Map<StackTrace, List<Long>> stackLocations = new IdentityHashMap<>();
    private final Map<SampleKey, long[]> samples = new LinkedHashMap<>();

    Tables(Recording recording) {
      this.recording = recording;
      string(""); // profile.proto: string_table[0] must be ""
      addMappings();
    }

    long string(String s) {
      return stringIndex.computeIfAbsent(s, k -> {
        strings.add(k);
        return (long) strings.size() - 1;
      });
    }

    /**
     * Only the modules frames point into, the executable first: pprof takes mapping 1 for the
     * main binary when it names the profile and looks for binaries to symbolize.
     */
    private void addMappings() {
      Map<ModuleInfo, Boolean> used = new IdentityHashMap<>();
      Set<StackTrace> seen = Collections.newSetFromMap(new IdentityHashMap<>());
      for (Sample sample : recording.samples()) {
        if (!seen.add(sample.stack())) {
          continue;
        }
        for (Frame frame : sample.stack().frames()) {
          if (isMachineCode(frame)) {
            recording.moduleAt(frame.address()).ifPresent(m -> used.put(m, true));
          }
        }
      }
      String exe = recording.target().executablePath();
      used.keySet().stream()
          .sorted(Comparator.comparing((ModuleInfo m) -> !m.path().equals(exe))
              .thenComparing(ModuleInfo::start, Long::compareUnsigned))
          .forEach(m -> {
            mappings.add(new MappingFacts(m));
            mappingIds.put(m, (long) mappings.size());
          });
    }

    void addSamples() {
      List<ValueType> extra = recording.sampleTypes().isEmpty() ? recording.pluginTypes()
          : List.of();
      for (Sample sample : recording.samples()) {
        List<Long> ids = stackLocations.computeIfAbsent(sample.stack(), this::locationIds);
        SampleKey key = new SampleKey(ids, sample.tid(), sample.threadName(),
            List.copyOf(new TreeMap<String, Object>(sample.attributes()).entrySet()));
        long[] values = sample.values();
        long[] counts = samples.computeIfAbsent(key,
            k -> new long[values.length > 0 ? values.length : 2 + extra.size()]);
        if (values.length > 0) {
          for (int i = 0; i < values.length; i++) {
            counts[i] += values[i];
          }
        } else {
          counts[0] += sample.count();
          counts[1] += sample.periods();
          for (int i = 0; i < extra.size(); i++) {
            counts[2 + i] += sample.pluginValues().getOrDefault(extra.get(i), 0L);
          }
        }
      }
    }

    /** Location ids leaf first, which is also pprof's order. */
    private List<Long> locationIds(StackTrace stack) {
      if (stack.frames().isEmpty()) {
        // pprof leaves samples without locations out of every report; keep them visible.
        return List.of(location(0, 0, function(Stacks.NO_FRAMES, "", "", 0), 0));
      }
      List<Long> ids = new ArrayList<>(stack.frames().size());
      for (Frame frame : stack.frames()) {
        ids.add(location(frame));
      }
      return List.copyOf(ids);
    }

    private long location(Frame frame) {
      if (frame.isError()) {
        long fn = function(FrameLabels.label(frame, recording), frame.function(), "", 0);
        return location(0, 0, fn, 0);
      }
      if (!isMachineCode(frame)) {
        String name = frame.function().isEmpty() ? "?" : frame.function();
        long fn = function(name, frame.function(), frame.file(), frame.startLine());
        return location(0, frame.address(), fn, frame.line());
      }
      long mappingId = recording.moduleAt(frame.address()).map(mappingIds::get).orElse(0L);
      MappingFacts facts = mappingId == 0 ? null : mappings.get((int) mappingId - 1);
      if (frame.function().isEmpty()) {
        return location(mappingId, frame.address(), 0, 0);
      }
      if (facts != null) {
        // Tells pprof this mapping is already symbolized, so it keeps our names instead of
        // looking for the binary; mappings without any symbol stay open to its symbolizer.
        facts.hasFunctions = true;
        facts.hasFilenames |= !frame.file().isEmpty();
        facts.hasLineNumbers |= frame.line() > 0;
      }
      long fn = function(frame.function(), frame.function(), frame.file(), frame.startLine());
      return location(mappingId, frame.address(), fn, frame.line());
    }

    private long function(String name, String systemName, String file, long startLine) {
      FunctionKey key = new FunctionKey(string(name), string(systemName), string(file), startLine);
      return functions.computeIfAbsent(key, k -> (long) functions.size() + 1);
    }

    private long location(long mappingId, long address, long functionId, long line) {
      LocationKey key = new LocationKey(mappingId, address, functionId, line);
      return locations.computeIfAbsent(key, k -> (long) locations.size() + 1);
    }

    void writeTo(CodedOutputStream out) throws IOException {
      long samplesType = string("samples");
      long cpuType = string("cpu");
      long countUnit = string("count");
      long nanosUnit = string("nanoseconds");
      long threadIdKey = string("thread.id");
      long threadNameKey = string("thread.name");
      List<Long> comments = comments();

      List<ValueType> types = recording.sampleTypes();
      // Recordings with sample types: one sample per period bytes allocated (or calls made).
      long periodType = types.isEmpty() ? 0 : string(recording.periodType().type());
      long periodUnit = types.isEmpty() ? 0 : string(recording.periodType().unit());
      long[][] typeIds = new long[types.size()][];
      for (int i = 0; i < types.size(); i++) {
        typeIds[i] = new long[] {string(types.get(i).type()), string(types.get(i).unit())};
      }
      // A plug-in's own sample types follow the CPU ones (docs/plugin-authoring.md, "Sample
      // types").
      List<ValueType> extra = types.isEmpty() ? recording.pluginTypes() : List.of();
      if (types.isEmpty()) {
        message(out, 1, o -> valueType(o, samplesType, countUnit));
        message(out, 1, o -> valueType(o, cpuType, nanosUnit));
        for (ValueType t : extra) {
          long type = string(t.type());
          long unit = string(t.unit());
          message(out, 1, o -> valueType(o, type, unit));
        }
      } else {
        for (long[] t : typeIds) {
          message(out, 1, o -> valueType(o, t[0], t[1]));
        }
      }
      long period = recording.periodNanos();
      for (Map.Entry<SampleKey, long[]> e : samples.entrySet()) {
        SampleKey key = e.getKey();
        long count = e.getValue()[0];
        long periods = types.isEmpty() ? e.getValue()[1] : 0;
        // Strings are interned before the nested message is written: the table comes last.
        long threadName = string(key.threadName());
        // A long is a numeric label; a string, double or boolean a string one (pprof has no
        // other kinds).
        List<long[]> attrs = new ArrayList<>();
        for (Map.Entry<String, Object> a : key.attributes()) {
          attrs.add(a.getValue() instanceof Long l ? new long[] {string(a.getKey()), 0, l}
              : new long[] {string(a.getKey()), string(String.valueOf(a.getValue()))});
        }
        message(out, 2, o -> {
          packed(o, 1, key.locationIds().stream().mapToLong(Long::longValue).toArray());
          // samples: those taken; cpu: the time they stand for, ticks not taken included.
          packed(o, 2, types.isEmpty() ? cpuValues(e.getValue(), period) : e.getValue());
          message(o, 3, l -> {
            int64(l, 1, threadIdKey);
            int64(l, 3, key.tid());
          });
          message(o, 3, l -> {
            int64(l, 1, threadNameKey);
            int64(l, 2, threadName);
          });
          for (long[] a : attrs) {
            message(o, 3, l -> {
              int64(l, 1, a[0]);
              if (a.length == 3) {
                int64(l, 3, a[2]); // num
              } else {
                int64(l, 2, a[1]); // str
              }
            });
          }
        });
      }
      for (int i = 0; i < mappings.size(); i++) {
        MappingFacts m = mappings.get(i);
        long id = i + 1;
        long filename = string(m.module.path());
        long buildId = string(m.module.buildId());
        message(out, 3, o -> {
          int64(o, 1, id);
          int64(o, 2, m.module.start());
          int64(o, 3, m.module.end());
          int64(o, 4, m.module.fileOffset());
          int64(o, 5, filename);
          int64(o, 6, buildId);
          bool(o, 7, m.hasFunctions);
          bool(o, 8, m.hasFilenames);
          bool(o, 9, m.hasLineNumbers);
        });
      }
      for (Map.Entry<LocationKey, Long> e : locations.entrySet()) {
        LocationKey l = e.getKey();
        message(out, 4, o -> {
          int64(o, 1, e.getValue());
          int64(o, 2, l.mappingId());
          int64(o, 3, l.address());
          if (l.functionId() != 0) {
            message(o, 4, line -> {
              int64(line, 1, l.functionId());
              int64(line, 2, l.line());
            });
          }
        });
      }
      for (Map.Entry<FunctionKey, Long> e : functions.entrySet()) {
        FunctionKey f = e.getKey();
        message(out, 5, o -> {
          int64(o, 1, e.getValue());
          int64(o, 2, f.name());
          int64(o, 3, f.systemName());
          int64(o, 4, f.filename());
          int64(o, 5, f.startLine());
        });
      }
      for (String s : strings) {
        out.writeString(6, s);
      }
      int64(out, 9, recording.startEpochNanos());
      int64(out, 10, recording.endEpochNanos() - recording.startEpochNanos());
      if (types.isEmpty()) {
        message(out, 11, o -> valueType(o, cpuType, nanosUnit));
      } else {
        message(out, 11, o -> valueType(o, periodType, periodUnit));
      }
      int64(out, 12, period);
      packed(out, 13, comments.stream().mapToLong(Long::longValue).toArray());
      // Time by default, as Go's CPU profiles do: the flame graph and folded output weigh periods.
      int64(out, 14, types.isEmpty() ? cpuType : typeIds[recording.defaultType()][0]);
    }

    /** A CPU sample's values: its count, its periods as time, then plug-in values as summed. */
    private static long[] cpuValues(long[] summed, long period) {
      long[] out = summed.clone();
      out[1] = summed[1] * period;
      return out;
    }

    /** Facts pprof has no field for; {@code pprof -comments} shows them. */
    private List<Long> comments() {
      List<Long> comments = new ArrayList<>();
      comments.add(string(Stacks.exporter()));
      comments.add(string("target: pid " + recording.target().pid() + " "
          + String.join(" ", recording.target().commandLine())));
      comments.add(string("mode: " + recording.mode()));
      if (recording.sampleTypes().isEmpty()) {
        comments.add(string("rate: " + SamplingRates.of(recording.periodNanos(),
            recording.losses(), Sample.count(recording.samples()),
            Stacks.threadNames(recording).size(),
            recording.endEpochNanos() - recording.startEpochNanos()).describe()));
      } else if (recording.periodType().equals(ValueType.CALLS)) {
        comments.add(string("sampling: one stack per " + recording.periodNanos()
            + " calls on average (1: every call)"));
      } else {
        comments.add(string("sampling: one sample per " + recording.periodNanos()
            + " bytes allocated on average (1: every call)"));
      }
      Counters.ofKind(recording.losses(), CounterKind.LOSS).forEach(
          (reason, n) -> comments.add(string("lost: " + reason + "=" + n)));
      Stacks.captureFigures(recording).forEach(
          (figure, n) -> comments.add(string("tick capture: " + figure + "=" + n)));
      return comments;
    }
  }

  private static boolean isMachineCode(Frame frame) {
    return Frame.NATIVE.equals(frame.type()) || Frame.KERNEL.equals(frame.type());
  }

  private interface Body {
    void writeTo(CodedOutputStream out) throws IOException;
  }

  /** A length-delimited nested message; buffered because its length comes first. */
  private static void message(CodedOutputStream out, int field, Body body) throws IOException {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    CodedOutputStream nested = CodedOutputStream.newInstance(buffer);
    body.writeTo(nested);
    nested.flush();
    out.writeByteArray(field, buffer.toByteArray());
  }

  private static void valueType(CodedOutputStream out, long type, long unit) throws IOException {
    int64(out, 1, type);
    int64(out, 2, unit);
  }

  /** Zero is the proto3 default, so it is left out as protoc-generated code would. */
  private static void int64(CodedOutputStream out, int field, long value) throws IOException {
    if (value != 0) {
      out.writeInt64(field, value);
    }
  }

  private static void bool(CodedOutputStream out, int field, boolean value) throws IOException {
    if (value) {
      out.writeBool(field, true);
    }
  }

  private static void packed(CodedOutputStream out, int field, long[] values) throws IOException {
    if (values.length == 0) {
      return;
    }
    int size = 0;
    for (long v : values) {
      size += CodedOutputStream.computeInt64SizeNoTag(v);
    }
    out.writeTag(field, WireFormat.WIRETYPE_LENGTH_DELIMITED);
    out.writeUInt32NoTag(size);
    for (long v : values) {
      out.writeInt64NoTag(v);
    }
  }
}
