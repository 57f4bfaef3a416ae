package dev.polystack.otel.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.otel.model.ValueType;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Allocation recordings: pprof carries the four sample types with alloc_space by default, as
 * {@code go tool pprof} reads them; folded weighs stacks by the chosen type.
 */
class AllocationOutputTest {
  @TempDir Path dir;

  static Recording allocations() {
    TargetInfo target = new TargetInfo(7, TestRecordings.APP.path(),
        List.of(TestRecordings.APP.path()));
    StackTrace compute = new StackTrace(List.of(TestRecordings.MAIN));
    StackTrace pcall = new StackTrace(List.of(TestRecordings.LUA_PCALL, TestRecordings.MAIN));
    return new Recording(target, 1_000_000_000L, 2_000_000_000L, 524288, "bpf-alloc",
        List.of(TestRecordings.APP, TestRecordings.LUAJIT),
        List.of(new Sample(7, "", 2_000_000_000L, compute, Map.of(), 1, 1,
                new long[] {30, 3000, 3, 300}),
            new Sample(7, "", 2_000_000_000L, pcall, Map.of(), 1, 1,
                new long[] {10, 1000, 0, 0})),
        Map.of(), ValueType.ALLOCATIONS, 1);
  }

  @Test
  void pprofHasTheFourTypesAndAllocSpaceByDefault() throws Exception {
    Path profile = dir.resolve("alloc.pb.gz");
    try (OutputStream out = Files.newOutputStream(profile)) {
      ProfileFormat.PPROF.writer().write(allocations(), out);
    }
    String go = PprofWriterTest.findGo();
    Proc raw = Proc.run(Duration.ofMinutes(5), dir, go, "tool", "pprof", "-raw",
        profile.toString()).assertSuccess();
    assertTrue(raw.stdout().contains("alloc_objects/count alloc_space/bytes[dflt]"
        + " inuse_objects/count inuse_space/bytes"), raw::toString);
    assertTrue(raw.stdout().contains("PeriodType: space bytes"), raw::toString);
    Proc inuse = Proc.run(Duration.ofMinutes(5), dir, go, "tool", "pprof",
        "-sample_index=inuse_objects", "-top", profile.toString()).assertSuccess();
    assertTrue(inuse.stdout().contains("Total samples = 3"), inuse::toString);
  }

  @Test
  void foldedWeighsByTheChosenType() throws Exception {
    assertEquals("main 3000\nmain;lua_pcall 1000\n", folded(allocations()));
    assertEquals("main 300\nmain;lua_pcall 0\n",
        folded(allocations().withDefaultType("inuse_space")));
  }

  private static String folded(Recording r) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ProfileFormat.FOLDED.writer().write(r, out);
    return out.toString(StandardCharsets.UTF_8);
  }
}
