package dev.polystack.otel.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class ProfileFormatTest {

  @Test
  void parsesTheLowerCaseNames() {
    assertEquals(ProfileFormat.HTML, ProfileFormat.parse("html"));
    assertEquals(ProfileFormat.PPROF, ProfileFormat.parse("pprof"));
    assertEquals(ProfileFormat.FOLDED, ProfileFormat.parse("folded"));
    assertEquals(ProfileFormat.SPEEDSCOPE, ProfileFormat.parse("speedscope"));
    assertEquals(ProfileFormat.OTLP, ProfileFormat.parse("otlp"));
  }

  @Test
  void unknownNameListsTheKnownOnes() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ProfileFormat.parse("HTML"));
    assertEquals("unknown output format 'HTML', expected one of html, pprof, folded, speedscope,"
        + " otlp",
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
  @CsvSource({
    "p.html, HTML", "P.HTM, HTML", "x.folded, FOLDED", "x.collapsed, FOLDED", "out.txt, FOLDED",
    "cpu.pb.gz, PPROF", "cpu.pprof, PPROF", "cpu.prof, PPROF", "x.pb, PPROF",
    "a.speedscope.json, SPEEDSCOPE",
    "a.json, SPEEDSCOPE", "r.otlp.pb, OTLP",
  })
  void theFileNameEndingSaysTheFormat(String name, ProfileFormat expected) {
    assertEquals(Optional.of(expected), ProfileFormat.forFileName(name));
  }

  @ParameterizedTest
  @ValueSource(strings = {"profile", "profile.out", "x.gz", ".html", "html"})
  void otherEndingsSayNothing(String name) {
    assertEquals(Optional.empty(), ProfileFormat.forFileName(name));
  }

  @Test
  void everyDefaultFileNameMapsBackToItsFormat() {
    for (ProfileFormat f : ProfileFormat.values()) {
      assertEquals(Optional.of(f), ProfileFormat.forFileName("prog-1-2." + f.extension()),
          f.name());
    }
  }

  @Test
  void anotherToolsFormatIsRefusedNamingOurs() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ProfileFormat.forFileName("app.JFR"));
    assertEquals("a .jfr file is JFR (async-profiler's and the JDK's recording format), not a"
        + " format polystack writes; polystack writes html (.html, .htm), pprof (.pb.gz,"
        + " .pprof, .prof, .pb), folded (.folded, .collapsed, .txt), speedscope"
        + " (.speedscope.json, .json), otlp (.otlp.pb)", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> ProfileFormat.forFileName("fg.svg"));
    assertEquals(".folded, .collapsed or .txt", ProfileFormat.FOLDED.endings());
    assertEquals(".otlp.pb", ProfileFormat.OTLP.endings());
  }

  @ParameterizedTest
  @EnumSource(ProfileFormat.class)
  void everyWriterIsDeterministicAndLeavesTheStreamOpen(ProfileFormat format) throws IOException {
    ByteArrayOutputStream first = new ByteArrayOutputStream();
    format.writer().write(TestRecordings.service(), first);
    ByteArrayOutputStream second = new ByteArrayOutputStream();
    format.writer().write(withFreshStackObjects(TestRecordings.service()), second);
    assertTrue(first.size() > 0);
    // Equal recordings give equal bytes (pprof's gzip header has no timestamp), also when the
    // interned stack objects differ as they do between runs: diffs show real changes only.
    assertEquals(first.toString(StandardCharsets.ISO_8859_1),
        second.toString(StandardCharsets.ISO_8859_1));
  }

  /** The same recording with new (still interned) stack objects, so identity hashes change. */
  private static Recording withFreshStackObjects(Recording r) {
    Map<StackTrace, StackTrace> fresh = new IdentityHashMap<>();
    List<Sample> samples = r.samples().stream()
        .map(s -> new Sample(s.tid(), s.threadName(), s.epochNanos(),
            fresh.computeIfAbsent(s.stack(), st -> new StackTrace(st.frames())), s.attributes()))
        .toList();
    return new Recording(r.target(), r.startEpochNanos(), r.endEpochNanos(), r.periodNanos(),
        r.mode(), r.modules(), samples, r.losses());
  }
}
