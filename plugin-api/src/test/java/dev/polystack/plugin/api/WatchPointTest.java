package dev.polystack.plugin.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** What a debug register can watch: 1, 2, 4 or 8 bytes, aligned, described in one line. */
class WatchPointTest {
  @Test
  void acceptsAnAlignedDatumOfADebugRegistersLength() {
    WatchPoint w = new WatchPoint(0x7f00_0000_1068L, 4, "Lua function at app.lua:5");
    assertEquals(4, w.length());
    new WatchPoint(0x1001, 1, "a byte");
    new WatchPoint(0x1008, 8, "a word");
  }

  @Test
  void refusesWhatNoDebugRegisterWatches() {
    assertThrows(IllegalArgumentException.class, () -> new WatchPoint(0x1000, 3, "x"));
    assertThrows(IllegalArgumentException.class, () -> new WatchPoint(0x1000, 16, "x"));
    assertThrows(IllegalArgumentException.class, () -> new WatchPoint(0x1002, 4, "x"));
    assertThrows(IllegalArgumentException.class, () -> new WatchPoint(0, 4, "x"));
    assertThrows(IllegalArgumentException.class, () -> new WatchPoint(-8, 8, "x"));
    assertThrows(IllegalArgumentException.class, () -> new WatchPoint(0x1000, 4, "two\nlines"));
    assertThrows(IllegalArgumentException.class, () -> new WatchPoint(0x1000, 4, null));
  }
}
