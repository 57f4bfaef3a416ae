package dev.polystack.otel.counters;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class CountersTest {
  @Test
  void everyDeclarationIsLowerSnakeUniqueAndComplete() {
    Set<String> names = new HashSet<>();
    for (Counter c : HostCounters.all()) {
      assertTrue(c.name().matches("[a-z][a-z0-9_]{0,63}"), c.name());
      assertTrue(names.add(c.name()), "declared twice: " + c.name());
      assertTrue(c.description().endsWith("."), c.name() + ": a sentence");
      assertEquals(c.kind() == CounterKind.LOSS, c.group() != LossGroup.NONE, c.name());
      assertFalse(c.group() == LossGroup.OTHER, c.name() + ": OTHER is for undeclared names");
      assertEquals(c, Counters.classify(c.name()));
    }
    // The ones the summary bug was about, and one of each kind.
    assertEquals(CounterKind.LOSS, Counters.classify("capture_plan_refused").kind());
    assertEquals(CounterKind.LOSS, Counters.classify("capture_counters_unreadable").kind());
    assertEquals(CounterKind.CAPTURE_FIGURE, Counters.classify("capture_records").kind());
    assertEquals(CounterKind.NOTE, Counters.classify("module_over_cap").kind());
    assertEquals(CounterKind.ERROR_FRAME, Counters.classify("no_module").kind());
  }

  @Test
  void pluginCountersHaveANamespaceOfTheirOwn() {
    String name = Counters.pluginCounter("luajit", "g_from_cache");
    assertEquals("plugin.luajit.g_from_cache", name);
    Counter c = Counters.classify(name);
    assertEquals(CounterKind.PLUGIN_NOTE, c.kind());
    assertEquals(LossGroup.NONE, c.group());
    // A plug-in cannot pass off its counter as a host loss, nor smuggle odd characters.
    assertEquals(CounterKind.PLUGIN_NOTE,
        Counters.classify(Counters.pluginCounter("luajit", "queue_full")).kind());
    assertEquals("plugin.x_y.a_b", Counters.pluginCounter("x y", "a\nb"));
    assertThrows(IllegalArgumentException.class, () -> new Counter("plugin.x.y", CounterKind.NOTE,
        LossGroup.NONE, "event", "Not a plug-in note."));
    assertThrows(IllegalArgumentException.class, () -> new Counter("x", CounterKind.PLUGIN_NOTE,
        LossGroup.NONE, "event", "Not in the namespace."));
  }

  @Test
  void anUndeclaredNameIsALossForOtherReasons() {
    Counter c = Counters.classify("something_new");
    assertEquals(CounterKind.LOSS, c.kind());
    assertEquals(LossGroup.OTHER, c.group());
    assertTrue(Counters.declared("something_new").isEmpty());
    // Odd input cannot make classification throw.
    assertEquals(CounterKind.LOSS, Counters.classify("a b\u0000" + "x".repeat(400)).kind());
  }

  @Test
  void splitsAMapByKind() {
    Map<String, Long> counters = new LinkedHashMap<>();
    counters.put("late_tick", 3L);
    counters.put("capture_plan_refused", 1L);
    counters.put("capture_records", 298L);
    counters.put("capture_ticks", 298L);
    counters.put("plugin.luajit.g_from_cache", 40L);
    counters.put("module_not_elf", 2L);
    counters.put("something_new", 5L);
    var byKind = Counters.byKind(counters);
    assertEquals(Map.of("late_tick", 3L, "capture_plan_refused", 1L, "something_new", 5L),
        byKind.get(CounterKind.LOSS));
    assertEquals(Map.of("capture_records", 298L, "capture_ticks", 298L),
        byKind.get(CounterKind.CAPTURE_FIGURE));
    assertEquals(Map.of("module_not_elf", 2L), byKind.get(CounterKind.NOTE));
    assertEquals(Map.of("plugin.luajit.g_from_cache", 40L), byKind.get(CounterKind.PLUGIN_NOTE));
    assertEquals(9, Counters.lost(counters));
  }

  @Test
  void kernelCountersMapToTheirDeclarations() {
    assertEquals(HostCounters.BPF_RING_FULL, HostCounters.kernel("ring_full"));
    assertEquals(HostCounters.BPF_NO_USER_REGS, HostCounters.kernel("no_user_regs"));
    assertEquals(HostCounters.CAPTURE_TICKS, HostCounters.kernel("ticks"));
    assertEquals(LossGroup.OTHER, HostCounters.kernel("new_in_the_kernel").group());
  }

  @Test
  void traceCountersAreDeclaredApartFromARecords() {
    CounterRegistry trace = TraceCounters.registry();
    Set<String> names = new HashSet<>();
    for (Counter c : TraceCounters.all()) {
      assertTrue(c.name().matches("[a-z][a-z0-9_]{0,63}"), c.name());
      assertTrue(names.add(c.name()), "declared twice: " + c.name());
      assertEquals(c, trace.classify(c.name()));
      assertFalse(c.group() == LossGroup.OTHER, c.name());
    }
    // The same name may mean a sample in a record and a call record in a trace.
    assertEquals("sample", Counters.classify("thread_gone").unit());
    assertEquals("hit", trace.classify("thread_gone").unit());
    // What every call still has recorded is not a loss.
    assertEquals(CounterKind.NOTE, trace.classify("sigtrap_delivered").kind());
    assertEquals(CounterKind.NOTE, trace.classify("exec").kind());
    assertEquals(CounterKind.LOSS, trace.classify("return_missed").kind());
    assertEquals(LossGroup.OTHER, trace.classify("something_new").group());
  }

  @Test
  void aDeclarationIsValidated() {
    assertThrows(IllegalArgumentException.class, () -> new Counter("x", CounterKind.LOSS,
        LossGroup.NONE, "sample", "A loss without a group."));
    assertThrows(IllegalArgumentException.class, () -> new Counter("x", CounterKind.NOTE,
        LossGroup.BUSY, "sample", "A note with a group."));
    assertThrows(IllegalArgumentException.class, () -> new Counter("x y", CounterKind.NOTE,
        LossGroup.NONE, "sample", "A space in the name."));
    assertThrows(IllegalArgumentException.class, () -> new Counter("x", CounterKind.NOTE,
        LossGroup.NONE, " ", "No unit."));
  }
}
