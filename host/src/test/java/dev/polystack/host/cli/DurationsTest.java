package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class DurationsTest {

  @Test
  void aBareNumberIsSecondsAsPySpyReadsIt() {
    assertEquals(Duration.ofSeconds(8), Durations.parse("8"));
    assertEquals(Duration.ofSeconds(8), Durations.parse("8s"));
  }

  @Test
  void unitsAreReadAsWritten() {
    assertEquals(Duration.ofMillis(500), Durations.parse("500ms"));
    assertEquals(Duration.ofMinutes(2), Durations.parse("2m"));
    assertEquals(Duration.ofHours(1), Durations.parse(" 1h "));
  }

  @Test
  void zeroNegativeAndUnknownUnitsAreRefusedWithTheSyntax() {
    CommandLine.TypeConversionException zero =
        assertThrows(CommandLine.TypeConversionException.class, () -> Durations.parse("0"));
    assertEquals("'0': a duration must be > 0", zero.getMessage());
    for (String bad : new String[] {"-5", "5x", "1.5s", "", "s"}) {
      CommandLine.TypeConversionException e =
          assertThrows(CommandLine.TypeConversionException.class, () -> Durations.parse(bad));
      assertEquals("'" + bad + "' is not a duration: write a whole number of seconds, or with"
          + " ms, s, m or h, e.g. 500ms, 10s, 2m", e.getMessage());
    }
  }
}
