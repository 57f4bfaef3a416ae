package dev.polystack.otel.otlp;

import com.google.protobuf.ByteString;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.plugin.api.Frame;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.profiles.v1development.Mapping;
import io.opentelemetry.proto.profiles.v1development.Profile;
import io.opentelemetry.proto.profiles.v1development.ResourceProfiles;
import io.opentelemetry.proto.profiles.v1development.ScopeProfiles;
import io.opentelemetry.proto.profiles.v1development.ValueType;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * A {@link Recording} (a whole session, or the samples of one export interval) as one OTLP
 * ExportProfilesServiceRequest (opentelemetry-proto 1.10/1.11 layout): one resource, one scope,
 * one Profile of sample type samples/count with period type cpu/nanoseconds, or, for a recording
 * whose samples carry values (allocations), one Profile per sample type (see {@code
 * valueProfile}). In the CPU profile, samples with the same stack and attributes are merged into
 * one Sample carrying one timestamp per sample and no values (each timestamp counts one); when a
 * sample of the recording carries ticks that were not taken ({@link Sample#periods()} above 1),
 * every Sample of that profile also has values, the periods of each timestamp. Samples a long
 * recording merged without their times ({@link Sample#merged()}) become one Sample per stack and
 * attributes with a value and no timestamp. docs/otlp.md has the field-by-field table.
 */
public final class ProfilesMapper {

  private ProfilesMapper() {}

  /** The request for {@code recording}; its samples may be empty (a Collector acknowledges). */
  public static ExportProfilesServiceRequest toRequest(Recording recording,
      OtlpResource resource) {
    return toRequest(List.of(new ProfileBatch.Part(recording, resource)));
  }

  /**
   * One request for several processes: a ResourceProfiles per part, in order, and one
   * dictionary they all index (function names and files common to them are stored once).
   */
  public static ExportProfilesServiceRequest toRequest(List<ProfileBatch.Part> parts) {
    Dictionary dict = new Dictionary();
    ExportProfilesServiceRequest.Builder request = ExportProfilesServiceRequest.newBuilder();
    for (ProfileBatch.Part part : parts) {
      request.addResourceProfiles(new Build(part.recording(), dict).resourceProfiles(
          part.resource()));
    }
    return request.setDictionary(dict.build()).build();
  }

  private record SampleKey(int stack, List<Integer> attributes) {}

  /** One recording's part of a request; locations name its own mappings, so they are its own. */
  private static final class Build {
    private final Recording recording;
    private final Dictionary dict;
    private final Map<StackTrace, Integer> stacks = new IdentityHashMap<>();
    private final Map<ModuleInfo, Integer> mappings = new IdentityHashMap<>();
    private final Map<Frame, Integer> locations = new java.util.HashMap<>();

    Build(Recording recording, Dictionary dict) {
      this.recording = recording;
      this.dict = dict;
    }

    ResourceProfiles resourceProfiles(OtlpResource resource) {
      ScopeProfiles.Builder scope = ScopeProfiles.newBuilder().setScope(OtlpResource.scope());
      if (recording.sampleTypes().isEmpty()) {
        scope.addProfiles(cpuProfile());
        for (dev.polystack.otel.model.ValueType type : recording.pluginTypes()) {
          scope.addProfiles(pluginProfile(type));
        }
      } else {
        for (int i = 0; i < recording.sampleTypes().size(); i++) {
          scope.addProfiles(valueProfile(i));
        }
      }
      return ResourceProfiles.newBuilder()
          .setResource(resource.toProto())
          .addScopeProfiles(scope)
          .build();
    }

    /**
     * The profile of sample type {@code index} of a recording whose samples carry values (an
     * allocation recording): one Sample per stack and attributes with the sum of that value and
     * no timestamps (the values are totals over the run, inuse ones as of its end); stacks whose
     * value is 0 (all freed, for inuse) are left out. The period is the mean number of bytes
     * between two samples, as pprof's heap profiles have it.
     */
    private Profile valueProfile(int index) {
      return summedProfile(recording.sampleTypes().get(index), s -> s.values()[index],
          recording.periodType());
    }

    /**
     * The profile of a plug-in's own sample type in a CPU recording: as {@link #valueProfile},
     * the sum of the value per stack and attributes, with the CPU profile's period.
     */
    private Profile pluginProfile(dev.polystack.otel.model.ValueType type) {
      return summedProfile(type, s -> s.pluginValues().getOrDefault(type, 0L),
          new dev.polystack.otel.model.ValueType("cpu", "nanoseconds"));
    }

    private Profile summedProfile(dev.polystack.otel.model.ValueType type,
        java.util.function.ToLongFunction<Sample> valueOf,
        dev.polystack.otel.model.ValueType periodType) {
      Map<SampleKey, long[]> sums = new LinkedHashMap<>();
      for (Sample sample : recording.samples()) {
        long value = valueOf.applyAsLong(sample);
        if (value == 0) {
          continue;
        }
        int stack = stacks.computeIfAbsent(sample.stack(), this::stack);
        sums.computeIfAbsent(new SampleKey(stack, attributes(sample)), k -> new long[1])[0] +=
            value;
      }
      Profile.Builder profile = Profile.newBuilder()
          .setSampleType(valueType(type.type(), type.unit()))
          .setPeriodType(valueType(periodType.type(), periodType.unit()))
          .setPeriod(recording.periodNanos())
          .setTimeUnixNano(recording.startEpochNanos())
          .setDurationNano(recording.endEpochNanos() - recording.startEpochNanos())
          .setProfileId(profileId(recording, type.type()));
      sums.forEach((key, sum) -> profile.addSamples(
          io.opentelemetry.proto.profiles.v1development.Sample.newBuilder()
              .setStackIndex(key.stack())
              .addAllAttributeIndices(key.attributes())
              .addValues(sum[0])));
      return profile.build();
    }

    /** The CPU profile: samples/count, one timestamp per sample (see the class comment). */
    private Profile cpuProfile() {
      Map<SampleKey, List<Sample>> merged = new LinkedHashMap<>();
      boolean weighted = false;
      for (Sample sample : recording.samples()) {
        int stack = stacks.computeIfAbsent(sample.stack(), this::stack);
        merged.computeIfAbsent(new SampleKey(stack, attributes(sample)), k -> new ArrayList<>())
            .add(sample);
        weighted |= sample.periods() > 1;
      }
      Profile.Builder profile = Profile.newBuilder()
          .setSampleType(valueType("samples", "count"))
          .setPeriodType(valueType("cpu", "nanoseconds"))
          .setPeriod(recording.periodNanos())
          .setTimeUnixNano(recording.startEpochNanos())
          .setDurationNano(recording.endEpochNanos() - recording.startEpochNanos())
          .setProfileId(profileId(recording, "samples"));
      for (Map.Entry<SampleKey, List<Sample>> e : merged.entrySet()) {
        var s = io.opentelemetry.proto.profiles.v1development.Sample.newBuilder()
            .setStackIndex(e.getKey().stack())
            .addAllAttributeIndices(e.getKey().attributes());
        long untimed = 0;
        for (Sample sample : e.getValue()) {
          if (sample.merged()) {
            untimed += sample.periods(); // no time of its own: one aggregate Sample below
            continue;
          }
          s.addTimestampsUnixNano(sample.epochNanos());
          if (weighted) {
            // One value per timestamp (the same length, as OTLP requires when both are set).
            s.addValues(sample.periods());
          }
        }
        if (s.getTimestampsUnixNanoCount() > 0) {
          profile.addSamples(s);
        }
        if (untimed > 0) {
          profile.addSamples(io.opentelemetry.proto.profiles.v1development.Sample.newBuilder()
              .setStackIndex(e.getKey().stack())
              .addAllAttributeIndices(e.getKey().attributes())
              .addValues(untimed));
        }
      }
      return profile.build();
    }

    private ValueType valueType(String type, String unit) {
      return ValueType.newBuilder().setTypeStrindex(dict.string(type))
          .setUnitStrindex(dict.string(unit)).build();
    }

    private List<Integer> attributes(Sample sample) {
      List<Integer> out = new ArrayList<>();
      out.add(dict.attribute("thread.id", sample.tid()));
      if (!sample.threadName().isEmpty()) {
        out.add(dict.attribute("thread.name", sample.threadName()));
      }
      // Each value with its own type (Sample keeps String, Long, Double or Boolean).
      new TreeMap<String, Object>(sample.attributes()).forEach((k, v) -> out.add(
          v instanceof Long l ? dict.attribute(k, l)
              : v instanceof Double d ? dict.attribute(k, d)
              : v instanceof Boolean b ? dict.attribute(k, b)
              : dict.attribute(k, (String) v)));
      return List.copyOf(out);
    }

    private int stack(StackTrace stack) {
      List<Integer> indices = new ArrayList<>(stack.frames().size());
      for (Frame f : stack.frames()) {
        indices.add(locations.computeIfAbsent(f, this::location));
      }
      return dict.stack(indices);
    }

    private int location(Frame f) {
      List<Integer> attrs = List.of(dict.attribute("profile.frame.type", f.type()));
      if (f.isError()) {
        int fn = dict.function("[error: " + f.function() + "]", f.function(), "", 0);
        return dict.location(0, 0, fn, 0, attrs);
      }
      if (Frame.NATIVE.equals(f.type()) || Frame.KERNEL.equals(f.type())) {
        int mapping = recording.moduleAt(f.address())
            .map(m -> mappings.computeIfAbsent(m, this::mapping)).orElse(0);
        int fn = f.function().isEmpty() ? 0
            : dict.function(f.function(), f.function(), f.file(), f.startLine());
        return dict.location(mapping, f.address(), fn, f.line(), attrs);
      }
      String name = f.function().isEmpty() ? "?" : f.function();
      int fn = dict.function(name, f.function(), f.file(), f.startLine());
      return dict.location(0, f.address(), fn, f.line(), attrs);
    }

    private int mapping(ModuleInfo m) {
      Mapping.Builder b = Mapping.newBuilder().setMemoryStart(m.start()).setMemoryLimit(m.end())
          .setFileOffset(m.fileOffset()).setFilenameStrindex(dict.string(m.path()));
      if (!m.buildId().isEmpty()) {
        b.addAttributeIndices(dict.attribute("process.executable.build_id.gnu", m.buildId()));
      }
      if (!m.htlHash().isEmpty()) {
        b.addAttributeIndices(dict.attribute("process.executable.build_id.htlhash",
            m.htlHash()));
      }
      return dict.mapping(b.build());
    }
  }

  /**
   * 16 bytes from what identifies the interval (process, time span, sample count) and the
   * profile's sample type, so the same recording gives the same file; never all zero (a
   * name-based UUID has fixed version bits).
   */
  private static ByteString profileId(Recording r, String sampleType) {
    UUID id = UUID.nameUUIDFromBytes(("polystack/" + r.target().pid() + "/"
        + r.startEpochNanos() + "/" + r.endEpochNanos() + "/" + r.samples().size()
        + (sampleType.equals("samples") ? "" : "/" + sampleType))
        .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    return ByteString.copyFrom(ByteBuffer.allocate(16).putLong(id.getMostSignificantBits())
        .putLong(id.getLeastSignificantBits()).array());
  }
}
