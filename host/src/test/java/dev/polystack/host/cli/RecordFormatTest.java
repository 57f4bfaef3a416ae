package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.local.ProfileFormat;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Issue 18: {@code -o x.folded} without --format wrote HTML. */
class RecordFormatTest {

  @Test
  void theNameDecidesWithoutFormat() {
    assertEquals(ProfileFormat.FOLDED, RecordCommand.resolveFormat(null, Path.of("x.folded")));
    assertEquals(ProfileFormat.PPROF, RecordCommand.resolveFormat(null, Path.of("/t/cpu.pprof")));
    assertEquals(ProfileFormat.HTML, RecordCommand.resolveFormat(null, null));
  }

  /** Issue 29: Go's cpu.prof and other tools' names for pprof wrote HTML. */
  @Test
  void otherToolsNamesForPprofArePprof() {
    assertEquals(ProfileFormat.PPROF, RecordCommand.resolveFormat(null, Path.of("cpu.prof")));
    assertEquals(ProfileFormat.PPROF, RecordCommand.resolveFormat(null, Path.of("prof.pb")));
    assertEquals(ProfileFormat.PPROF, RecordCommand.resolveFormat(null, Path.of("x.PPROF")));
    assertEquals(ProfileFormat.OTLP, RecordCommand.resolveFormat(null, Path.of("x.otlp.pb")));
  }

  /** Issue 29: any other ending silently wrote HTML; it is refused with the known endings. */
  @Test
  void anUnknownEndingIsRefusedListingTheKnownOnes() {
    for (String name : new String[] {"prof.xyz", "out.txt.gz", "profile.out", "profile"}) {
      UsageException e = assertThrows(UsageException.class,
          () -> RecordCommand.resolveFormat(null, Path.of(name)));
      assertEquals("--output " + name + ": the name's ending says no format polystack writes;"
          + " end it with one of " + ProfileFormat.knownEndings() + ", or give --format",
          e.getMessage());
    }
    assertTrue(ProfileFormat.knownEndings().contains("pprof (.pb.gz, .pprof, .prof, .pb)"),
        ProfileFormat.knownEndings());
    // --format says what the name does not.
    assertEquals(ProfileFormat.FOLDED, RecordCommand.resolveFormat("folded", Path.of("p.xyz")));
  }

  /** {@code -o -} is stdout: the format comes from --format, else html. */
  @Test
  void dashIsStdoutWithoutAnEnding() {
    assertEquals(ProfileFormat.HTML, RecordCommand.resolveFormat(null, RecordCommand.STDOUT));
    assertEquals(ProfileFormat.FOLDED,
        RecordCommand.resolveFormat("folded", RecordCommand.STDOUT));
  }

  @Test
  void formatWinsWhereTheNameSaysNothingAndMustAgreeWhereItDoes() {
    assertEquals(ProfileFormat.OTLP, RecordCommand.resolveFormat("otlp", Path.of("out")));
    assertEquals(ProfileFormat.FOLDED, RecordCommand.resolveFormat("folded", Path.of("a.txt")));
    UsageException e = assertThrows(UsageException.class,
        () -> RecordCommand.resolveFormat("pprof", Path.of("p.html")));
    assertEquals("--format pprof contradicts --output p.html, whose name says html; drop"
        + " --format or end the name with .pb.gz, .pprof, .prof or .pb", e.getMessage());
  }

  @Test
  void anotherToolsFormatIsRefusedEvenWithFormat() {
    UsageException e = assertThrows(UsageException.class,
        () -> RecordCommand.resolveFormat("folded", Path.of("app.jfr")));
    assertEquals(true, e.getMessage().startsWith("--output app.jfr: a .jfr file is JFR"),
        e.getMessage());
  }
}
