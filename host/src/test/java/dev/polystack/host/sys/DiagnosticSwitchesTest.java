package dev.polystack.host.sys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Properties;
import org.junit.jupiter.api.Test;

class DiagnosticSwitchesTest {
  private static DiagnosticSwitches of(String... pairs) {
    Properties p = new Properties();
    for (int i = 0; i < pairs.length; i += 2) {
      p.setProperty(pairs[i], pairs[i + 1]);
    }
    return DiagnosticSwitches.from(p);
  }

  @Test
  void everyChoiceIsOnAndTheBreakdownOffWhenNothingIsSet() {
    assertEquals(new DiagnosticSwitches(true, true, true, true, true, true, false), of());
  }

  @Test
  void eachSwitchTurnsOffItsOwnChoiceOnly() {
    assertEquals(new DiagnosticSwitches(false, true, true, true, true, true, false),
        of("polystack.spinWait", "false"));
    assertEquals(new DiagnosticSwitches(true, false, true, true, true, true, false),
        of("polystack.holdPriority", "false"));
    assertEquals(new DiagnosticSwitches(true, true, false, true, true, true, false),
        of("polystack.cpuPlacement", "false"));
    assertEquals(new DiagnosticSwitches(true, true, true, false, true, true, false),
        of("polystack.blockingStopWait", "false"));
    assertEquals(new DiagnosticSwitches(true, true, true, true, false, true, false),
        of("polystack.prefetchWalk", "false"));
    assertEquals(new DiagnosticSwitches(true, true, true, true, true, false, false),
        of("polystack.stableLiveReads", "false"));
    assertEquals(new DiagnosticSwitches(true, true, true, true, true, true, true),
        of("polystack.pauseBreakdown", "true"));
  }

  @Test
  void onlyTheExactWordsChangeAnything() {
    // As the switches were read before they were gathered: "false" turns a choice off, anything
    // else leaves it on; "true" in any case turns the breakdown on (Boolean.getBoolean).
    assertEquals(of(), of("polystack.spinWait", "no", "polystack.pauseBreakdown", "yes"));
    assertEquals(of(), of("polystack.cpuPlacement", "FALSE"));
    assertTrue(of("polystack.pauseBreakdown", "TRUE").pauseBreakdown());
  }
}
