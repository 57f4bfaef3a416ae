package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.polystack.otel.local.ProfileFormat;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Issue 18: {@code -o x.folded} without --format wrote HTML. */
class RecordFormatTest {

  @Test
  void theNameDecidesWithoutFormat() {
    assertEquals(ProfileFormat.FOLDED, RecordCommand.resolveFormat(null, Path.of("x.folded")));
    assertEquals(ProfileFormat.PPROF, RecordCommand.resolveFormat(null, Path.of("/t/cpu.pprof")));
    assertEquals(ProfileFormat.HTML, RecordCommand.resolveFormat(null, Path.of("profile.out")));
    assertEquals(ProfileFormat.HTML, RecordCommand.resolveFormat(null, null));
  }

  @Test
  void formatWinsWhereTheNameSaysNothingAndMustAgreeWhereItDoes() {
    assertEquals(ProfileFormat.OTLP, RecordCommand.resolveFormat("otlp", Path.of("out")));
    assertEquals(ProfileFormat.FOLDED, RecordCommand.resolveFormat("folded", Path.of("a.txt")));
    UsageException e = assertThrows(UsageException.class,
        () -> RecordCommand.resolveFormat("pprof", Path.of("p.html")));
    assertEquals("--format pprof contradicts --output p.html, whose name says html; drop"
        + " --format or end the name with .pb.gz or .pprof", e.getMessage());
  }

  @Test
  void anotherToolsFormatIsRefusedEvenWithFormat() {
    UsageException e = assertThrows(UsageException.class,
        () -> RecordCommand.resolveFormat("folded", Path.of("app.jfr")));
    assertEquals(true, e.getMessage().startsWith("--output app.jfr: a .jfr file is JFR"),
        e.getMessage());
  }
}
