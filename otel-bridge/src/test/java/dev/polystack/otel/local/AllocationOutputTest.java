package dev.polystack.otel.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.model.Recording;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Allocation recordings: pprof carries the four sample types with alloc_space by default, as
 * {@code go tool pprof} reads them; folded weighs stacks by the chosen type.
 */
class AllocationOutputTest {
  @TempDir Path dir;

  @Test
  void pprofHasTheFourTypesAndAllocSpaceByDefault() throws Exception {
    Path profile = dir.resolve("alloc.pb.gz");
    try (OutputStream out = Files.newOutputStream(profile)) {
      ProfileFormat.PPROF.writer().write(TestRecordings.allocations(), out);
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
  void aCallsRecordingIsOneTypeOfCallsInPprofAndFolded() throws Exception {
    Path profile = dir.resolve("calls.pb.gz");
    try (OutputStream out = Files.newOutputStream(profile)) {
      ProfileFormat.PPROF.writer().write(TestRecordings.calls(), out);
    }
    Proc raw = Proc.run(Duration.ofMinutes(5), dir, PprofWriterTest.findGo(), "tool", "pprof",
        "-raw", profile.toString()).assertSuccess();
    assertTrue(raw.stdout().contains("PeriodType: calls count"), raw::toString);
    assertTrue(raw.stdout().contains("Period: 100"), raw::toString);
    assertTrue(raw.stdout().matches("(?s).*Samples:\\s+calls/count\\[dflt\\]\\s+3015:.*"),
        raw::toString);
    assertEquals("main 3015\nmain;lua_pcall 1005\n", folded(TestRecordings.calls()));
  }

  @Test
  void foldedWeighsByTheChosenType() throws Exception {
    assertEquals("main 3000\nmain;lua_pcall 1000\n", folded(TestRecordings.allocations()));
    assertEquals("main 300\nmain;lua_pcall 0\n",
        folded(TestRecordings.allocations().withDefaultType("inuse_space")));
  }

  private static String folded(Recording r) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ProfileFormat.FOLDED.writer().write(r, out);
    return out.toString(StandardCharsets.UTF_8);
  }
}
