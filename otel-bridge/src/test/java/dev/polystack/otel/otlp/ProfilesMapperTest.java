package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.local.TestRecordings;
import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.plugin.api.Frame;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.profiles.v1development.KeyValueAndUnit;
import io.opentelemetry.proto.profiles.v1development.Location;
import io.opentelemetry.proto.profiles.v1development.Profile;
import io.opentelemetry.proto.profiles.v1development.ProfilesDictionary;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class ProfilesMapperTest {
  private static final OtlpConfig CONFIG = OtlpConfig.defaults();

  private static ExportProfilesServiceRequest request(Recording r) {
    return ProfilesMapper.toRequest(r, OtlpResource.forTarget(r.target(), CONFIG));
  }

  @Test
  void everyTableStartsWithItsZeroEntryAndHasNoDuplicates() {
    ProfilesDictionary d = request(TestRecordings.service()).getDictionary();
    assertEquals("", d.getStringTable(0));
    assertEquals(KeyValueAndUnit.getDefaultInstance(), d.getAttributeTable(0));
    assertEquals(0, d.getFunctionTable(0).getSerializedSize());
    assertEquals(0, d.getMappingTable(0).getSerializedSize());
    assertEquals(0, d.getLocationTable(0).getSerializedSize());
    assertEquals(0, d.getStackTable(0).getSerializedSize());
    assertEquals(1, d.getLinkTableCount());
    assertEquals(16, d.getLinkTable(0).getTraceId().size());
    assertEquals(8, d.getLinkTable(0).getSpanId().size());
    for (List<?> table : List.of(d.getStringTableList(), d.getAttributeTableList(),
        d.getFunctionTableList(), d.getMappingTableList(), d.getLocationTableList(),
        d.getStackTableList())) {
      assertEquals(table.size(), new HashSet<>(table).size(), "duplicates in " + table);
    }
  }

  @Test
  void samplesCountByTimestampAndKeepTheirThread() {
    Recording r = TestRecordings.service();
    ExportProfilesServiceRequest req = request(r);
    Profile p = req.getResourceProfiles(0).getScopeProfiles(0).getProfiles(0);
    ProfilesDictionary d = req.getDictionary();
    assertEquals(r.samples().size(),
        p.getSamplesList().stream().mapToInt(s -> s.getTimestampsUnixNanoCount()).sum());
    assertEquals("samples", d.getStringTable(p.getSampleType().getTypeStrindex()));
    assertEquals("count", d.getStringTable(p.getSampleType().getUnitStrindex()));
    assertEquals("cpu", d.getStringTable(p.getPeriodType().getTypeStrindex()));
    assertEquals("nanoseconds", d.getStringTable(p.getPeriodType().getUnitStrindex()));
    assertEquals(TestRecordings.PERIOD, p.getPeriod());
    assertEquals(r.startEpochNanos(), p.getTimeUnixNano());
    assertEquals(16, p.getProfileId().size());
    Map<String, Integer> byThread = new HashMap<>();
    for (var s : p.getSamplesList()) {
      assertEquals(0, s.getValuesCount(), "timestamps only: each one is a sample");
      Map<String, String> a = attributes(d, s.getAttributeIndicesList());
      byThread.merge(a.get("thread.name"), s.getTimestampsUnixNanoCount(), Integer::sum);
    }
    assertEquals(Map.of("app-server", 8, "worker-1", 7), byThread);
  }

  @Test
  void anAllocationRecordingHasOneProfilePerSampleTypeWithoutItsZeroValues() {
    ExportProfilesServiceRequest req = request(TestRecordings.allocations());
    ProfilesDictionary d = req.getDictionary();
    List<Profile> profiles = req.getResourceProfiles(0).getScopeProfiles(0).getProfilesList();
    Map<String, List<Long>> valuesByType = new java.util.LinkedHashMap<>();
    Set<com.google.protobuf.ByteString> ids = new HashSet<>();
    for (Profile p : profiles) {
      String type = d.getStringTable(p.getSampleType().getTypeStrindex()) + "/"
          + d.getStringTable(p.getSampleType().getUnitStrindex());
      assertEquals("space/bytes", d.getStringTable(p.getPeriodType().getTypeStrindex()) + "/"
          + d.getStringTable(p.getPeriodType().getUnitStrindex()));
      assertEquals(524288, p.getPeriod());
      ids.add(p.getProfileId());
      List<Long> values = new ArrayList<>();
      for (var s : p.getSamplesList()) {
        assertEquals(0, s.getTimestampsUnixNanoCount(), "totals over the run: no timestamps");
        assertEquals(1, s.getValuesCount());
        values.add(s.getValues(0));
      }
      valuesByType.put(type, values);
    }
    assertEquals(Map.of("alloc_objects/count", List.of(30L, 10L),
        "alloc_space/bytes", List.of(3000L, 1000L),
        "inuse_objects/count", List.of(3L), "inuse_space/bytes", List.of(300L)), valuesByType);
    assertEquals(List.of("alloc_objects/count", "alloc_space/bytes", "inuse_objects/count",
        "inuse_space/bytes"), List.copyOf(valuesByType.keySet()), "pprof's order");
    assertEquals(4, ids.size(), "each profile its own id");
  }

  @Test
  void aCallsRecordingIsOneProfileOfCallsPerCalls() {
    ExportProfilesServiceRequest req = request(TestRecordings.calls());
    ProfilesDictionary d = req.getDictionary();
    List<Profile> profiles = req.getResourceProfiles(0).getScopeProfiles(0).getProfilesList();
    assertEquals(1, profiles.size());
    Profile p = profiles.get(0);
    assertEquals("calls/count", d.getStringTable(p.getSampleType().getTypeStrindex()) + "/"
        + d.getStringTable(p.getSampleType().getUnitStrindex()));
    assertEquals("calls/count", d.getStringTable(p.getPeriodType().getTypeStrindex()) + "/"
        + d.getStringTable(p.getPeriodType().getUnitStrindex()));
    assertEquals(100, p.getPeriod());
    assertEquals(List.of(3015L, 1005L),
        p.getSamplesList().stream().map(s -> s.getValues(0)).toList());
  }

  @Test
  void samplesThatCarryTicksGiveEveryTimestampItsPeriods() {
    Profile p = request(TestRecordings.carrying(4)).getResourceProfiles(0).getScopeProfiles(0)
        .getProfiles(0);
    assertEquals(1, p.getSamplesCount(), "one stack, one thread: merged");
    var s = p.getSamples(0);
    assertEquals(List.of(TestRecordings.START, TestRecordings.START + 4 * TestRecordings.PERIOD),
        s.getTimestampsUnixNanoList());
    assertEquals(List.of(1L, 4L), s.getValuesList(), "one value per timestamp");
  }

  @Test
  void mergedSamplesBecomeOneSampleWithAValueAndNoTimestamps() {
    Profile p = request(TestRecordings.merging(3, 5)).getResourceProfiles(0)
        .getScopeProfiles(0).getProfiles(0);
    assertEquals(2, p.getSamplesCount(), "the timed sample, then the merged ones");
    var timed = p.getSamples(0);
    assertEquals(List.of(TestRecordings.START), timed.getTimestampsUnixNanoList());
    assertEquals(List.of(1L), timed.getValuesList(), "weighted: a value per timestamp");
    var merged = p.getSamples(1);
    assertEquals(0, merged.getTimestampsUnixNanoCount());
    assertEquals(List.of(5L), merged.getValuesList(), "their periods, no times");
    assertEquals(timed.getStackIndex(), merged.getStackIndex());
    assertEquals(timed.getAttributeIndicesList(), merged.getAttributeIndicesList());
  }

  @Test
  void luaStackIsLeafFirstWithFrameTypesFunctionsAndLines() {
    ExportProfilesServiceRequest req = request(TestRecordings.service());
    ProfilesDictionary d = req.getDictionary();
    Profile p = req.getResourceProfiles(0).getScopeProfiles(0).getProfiles(0);
    var stack = d.getStackTable(p.getSamples(0).getStackIndex());
    List<String> names = new ArrayList<>();
    List<String> types = new ArrayList<>();
    for (int li : stack.getLocationIndicesList()) {
      Location l = d.getLocationTable(li);
      var fn = d.getFunctionTable(l.getLines(0).getFunctionIndex());
      names.add(d.getStringTable(fn.getNameStrindex()) + ":" + l.getLines(0).getLine());
      types.add(attributes(d, l.getAttributeIndicesList()).get("profile.frame.type"));
    }
    assertEquals(List.of("compute:17", "handle_request:42", "lj_BC_FUNCC:0", "lua_pcall:0",
        "main:0"), names);
    assertEquals(List.of("luajit", "luajit", "native", "native", "native"), types);
    var compute = d.getFunctionTable(d.getLocationTable(stack.getLocationIndices(0)).getLines(0)
        .getFunctionIndex());
    assertEquals("app.lua", d.getStringTable(compute.getFilenameStrindex()));
    assertEquals(15, compute.getStartLine());
  }

  @Test
  void severalProcessesShareOneDictionaryAndKeepTheirOwnMappings() {
    ModuleInfo a = new ModuleInfo(0x400000L, 0x401000L, 0, "/usr/bin/a", "aa", "");
    ModuleInfo b = new ModuleInfo(0x400000L, 0x401000L, 0, "/usr/bin/b", "bb", "");
    Frame f = new Frame(Frame.NATIVE, 0x400010L, "main", "", 0, 0, "", Map.of());
    Recording ra = new Recording(new TargetInfo(7, "/usr/bin/a", List.of("a")), 1, 2, 10,
        "bpf", List.of(a), List.of(new Sample(7, "a", 1, new StackTrace(List.of(f)), Map.of())),
        Map.of());
    Recording rb = new Recording(new TargetInfo(8, "/usr/bin/b", List.of("b")), 1, 2, 10,
        "bpf", List.of(b), List.of(new Sample(8, "b", 1, new StackTrace(List.of(f)), Map.of()),
            new Sample(8, "b", 2, new StackTrace(List.of(f)), Map.of())), Map.of());
    ExportProfilesServiceRequest req = ProfilesMapper.toRequest(List.of(
        new ProfileBatch.Part(ra, OtlpResource.forTarget(ra.target(), CONFIG)),
        new ProfileBatch.Part(rb, OtlpResource.forTarget(rb.target(), CONFIG))));
    assertEquals(2, req.getResourceProfilesCount());
    ProfilesDictionary d = req.getDictionary();
    List<String> files = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      var rp = req.getResourceProfiles(i);
      assertEquals(Long.toString(7 + i), rp.getResource().getAttributesList().stream()
          .filter(kv -> kv.getKey().equals("process.pid")).findFirst().orElseThrow()
          .getValue().getIntValue() + "");
      Profile p = rp.getScopeProfiles(0).getProfiles(0);
      assertEquals(i + 1, p.getSamplesList().stream()
          .mapToInt(s -> s.getTimestampsUnixNanoCount()).sum());
      Location l = d.getLocationTable(d.getStackTable(p.getSamples(0).getStackIndex())
          .getLocationIndices(0));
      files.add(d.getStringTable(d.getMappingTable(l.getMappingIndex()).getFilenameStrindex()));
    }
    // The same frame at the same address is a location of each process's own mapping.
    assertEquals(List.of("/usr/bin/a", "/usr/bin/b"), files);
    assertEquals(1, d.getStringTableList().stream().filter("main"::equals).count());
  }

  @Test
  void mappingsCarryBuildIdsAndOnlyReferencedModulesAppear() {
    ModuleInfo exe = new ModuleInfo(0x400000L, 0x401000L, 0, "/usr/bin/x", "abcd", "0011");
    ModuleInfo unused = new ModuleInfo(0x500000L, 0x501000L, 0, "/usr/lib/y.so", "", "22");
    Frame f = new Frame(Frame.NATIVE, 0x400010L, "", "", 0, 0, "/usr/bin/x", Map.of());
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/x", List.of("x")), 1, 2, 10,
        "ptrace", List.of(exe, unused),
        List.of(new Sample(7, "x", 1, new StackTrace(List.of(f)), Map.of())), Map.of());
    ProfilesDictionary d = request(r).getDictionary();
    assertEquals(2, d.getMappingTableCount());
    var m = d.getMappingTable(1);
    assertEquals(0x400000L, m.getMemoryStart());
    assertEquals(0x401000L, m.getMemoryLimit());
    assertEquals("/usr/bin/x", d.getStringTable(m.getFilenameStrindex()));
    assertEquals(Map.of("process.executable.build_id.gnu", "abcd",
        "process.executable.build_id.htlhash", "0011"),
        attributes(d, m.getAttributeIndicesList()));
    Location l = d.getLocationTable(1);
    assertEquals(1, l.getMappingIndex());
    assertEquals(0x400010L, l.getAddress());
    assertEquals(0, l.getLinesCount(), "no symbol: the address is left to symbolizers");
  }

  @Test
  void sampleAttributesKeepTheirTypes() {
    Frame lua = new Frame("luajit", 0, "f", "a.lua", 3, 1, "", Map.of());
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/luajit", List.of("luajit")), 1, 2,
        10, "ptrace", List.of(), List.of(new Sample(9, "luajit", 1,
            new StackTrace(List.of(lua)), Map.of("luajit.vmstate", "N", "luajit.trace", 12L,
                "x.ratio", 0.25, "x.gc", true))), Map.of());
    ExportProfilesServiceRequest req = request(r);
    var s = req.getResourceProfiles(0).getScopeProfiles(0).getProfiles(0).getSamples(0);
    Map<String, AnyValue> a = new HashMap<>();
    for (int i : s.getAttributeIndicesList()) {
      KeyValueAndUnit kv = req.getDictionary().getAttributeTable(i);
      a.put(req.getDictionary().getStringTable(kv.getKeyStrindex()), kv.getValue());
    }
    assertEquals(Map.of(
        "thread.id", AnyValue.newBuilder().setIntValue(9).build(),
        "thread.name", AnyValue.newBuilder().setStringValue("luajit").build(),
        "luajit.vmstate", AnyValue.newBuilder().setStringValue("N").build(),
        "luajit.trace", AnyValue.newBuilder().setIntValue(12).build(),
        "x.ratio", AnyValue.newBuilder().setDoubleValue(0.25).build(),
        "x.gc", AnyValue.newBuilder().setBoolValue(true).build()), a);
  }

  @Test
  void aPluginsSampleTypeIsOneMoreProfileSummedPerStack() {
    ExportProfilesServiceRequest req = request(TestRecordings.pluginValues());
    List<Profile> profiles = req.getResourceProfiles(0).getScopeProfiles(0).getProfilesList();
    assertEquals(2, profiles.size());
    ProfilesDictionary d = req.getDictionary();
    assertEquals("samples", d.getStringTable(profiles.get(0).getSampleType().getTypeStrindex()));
    assertTrue(profiles.get(0).getSamplesCount() >= 2, "the CPU profile has both stacks");
    Profile held = profiles.get(1);
    assertEquals("x.held", d.getStringTable(held.getSampleType().getTypeStrindex()));
    assertEquals("count", d.getStringTable(held.getSampleType().getUnitStrindex()));
    assertEquals("cpu", d.getStringTable(held.getPeriodType().getTypeStrindex()));
    // spin's 1 + 0 + 2 in one Sample; wait, which has none, left out.
    assertEquals(1, held.getSamplesCount());
    assertEquals(List.of(3L), held.getSamples(0).getValuesList());
    assertEquals(0, held.getSamples(0).getTimestampsUnixNanoCount());
    assertFalse(held.getProfileId().equals(profiles.get(0).getProfileId()));
  }

  @Test
  void frameAttributesStayOnTheFrame() {
    Frame lua = new Frame("luajit", 0, "f", "a.lua", 3, 1, "",
        Map.of("luajit.vmstate", "N", "luajit.trace", "12"));
    Recording r = new Recording(new TargetInfo(7, "/usr/bin/luajit", List.of("luajit")), 1, 2,
        10, "ptrace", List.of(),
        List.of(new Sample(9, "luajit", 1, new StackTrace(List.of(lua)), Map.of())), Map.of());
    ExportProfilesServiceRequest req = request(r);
    var s = req.getResourceProfiles(0).getScopeProfiles(0).getProfiles(0).getSamples(0);
    assertEquals(Map.of("thread.id", "9", "thread.name", "luajit"),
        attributes(req.getDictionary(), s.getAttributeIndicesList()));
  }

  @Test
  void resourceAndScopeUseInlineKeys() {
    ExportProfilesServiceRequest req = request(TestRecordings.service());
    var rp = req.getResourceProfiles(0);
    Map<String, String> res = rp.getResource().getAttributesList().stream().collect(
        Collectors.toMap(KeyValue::getKey, kv -> kv.getValue().hasIntValue()
            ? Long.toString(kv.getValue().getIntValue()) : kv.getValue().getStringValue()));
    assertEquals("unknown_service:app-server", res.get("service.name"));
    assertEquals("4242", res.get("process.pid"));
    assertEquals("app-server", res.get("process.executable.name"));
    assertEquals("/opt/demo/bin/app-server", res.get("process.executable.path"));
    assertFalse(res.get("host.name").isEmpty());
    assertEquals("polystack", rp.getScopeProfiles(0).getScope().getName());
  }

  @Test
  void serviceNameFromTheEnvironment() {
    OtlpConfig c = OtlpConfig.fromEnvironment(Map.of("OTEL_SERVICE_NAME", "checkout",
        "OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=prod,service.name=ignored"));
    OtlpResource res = OtlpResource.forTarget(TestRecordings.service().target(), c);
    assertEquals("checkout", res.serviceName());
    assertEquals("prod", res.attributes().get("deployment.environment.name"));
  }

  static Map<String, String> attributes(ProfilesDictionary d, List<Integer> indices) {
    Map<String, String> out = new HashMap<>();
    for (int i : indices) {
      KeyValueAndUnit kv = d.getAttributeTable(i);
      out.put(d.getStringTable(kv.getKeyStrindex()), kv.getValue().hasIntValue()
          ? Long.toString(kv.getValue().getIntValue()) : kv.getValue().getStringValue());
    }
    return out;
  }
}
