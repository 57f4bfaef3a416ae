package dev.polystack.otel.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class ProfileFormatTest {

  @Test
  void parsesTheLowerCaseNames() {
    assertEquals(ProfileFormat.HTML, ProfileFormat.parse("html"));
    assertEquals(ProfileFormat.PPROF, ProfileFormat.parse("pprof"));
    assertEquals(ProfileFormat.FOLDED, ProfileFormat.parse("folded"));
    assertEquals(ProfileFormat.SPEEDSCOPE, ProfileFormat.parse("speedscope"));
  }

  @Test
  void unknownNameListsTheKnownOnes() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ProfileFormat.parse("HTML"));
    assertEquals("unknown output format 'HTML', expected one of html, pprof, folded, speedscope",
        e.getMessage());
  }

  @Test
  void extensions() {
    assertEquals("html", ProfileFormat.HTML.extension());
    assertEquals("pb.gz", ProfileFormat.PPROF.extension());
    assertEquals("folded", ProfileFormat.FOLDED.extension());
    assertEquals("speedscope.json", ProfileFormat.SPEEDSCOPE.extension());
  }

  @ParameterizedTest
  @EnumSource(ProfileFormat.class)
  void everyWriterIsDeterministicAndLeavesTheStreamOpen(ProfileFormat format) throws IOException {
    ByteArrayOutputStream first = new ByteArrayOutputStream();
    format.writer().write(TestRecordings.service(), first);
    ByteArrayOutputStream second = new ByteArrayOutputStream();
    format.writer().write(TestRecordings.service(), second);
    assertTrue(first.size() > 0);
    // pprof's gzip header has no timestamp and the tables are in first-seen order, so every
    // format is byte-stable: diffs between two runs show real changes only.
    assertEquals(first.toString(java.nio.charset.StandardCharsets.ISO_8859_1),
        second.toString(java.nio.charset.StandardCharsets.ISO_8859_1));
  }
}
