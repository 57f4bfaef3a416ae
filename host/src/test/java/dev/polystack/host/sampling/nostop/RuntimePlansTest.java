package dev.polystack.host.sampling.nostop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.bpf.PlanEncoder;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.host.sampling.ThreadSample;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Register;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The per-process plan budget as docs/capture-plans.md states it: 3 distinct plug-in plans,
 * kept by plug-in id, module path and code address; every plan beyond counted once as
 * capture_plan_refused and the first one warned about once, naming its plug-in. The plans are
 * the LuaJIT plug-in's shape (one per VM, G as the constant) and go through the real encoder.
 */
class RuntimePlansTest {

  /** The LuaJIT plug-in's plan for the VM at {@code g} (luajit-plugin CapturePlans.forVm). */
  static CapturePlan luajitShaped(long g) {
    return CapturePlan.builder()
        .constant("G", g)
        .load("L", "G", 368, 8)
        .load("t", "L", 16, 8)
        .checkEquals("t", "G")
        .copy("G", -96, 96 + 376, "global_state")
        .copy("L", 0, 96, "lua_state")
        .load("stack", "L", 40, 8)
        .load("hi", "L", 32, 8)
        .register("t", Register.RDX)
        .max("hi", "hi", "t")
        .add("c", "hi", -CapturePlan.MAX_COPY_BYTES)
        .max("c", "c", "stack")
        .subtract("len", "hi", "c")
        .copy("c", 0, "len", CapturePlan.MAX_COPY_BYTES, "lua_stack")
        .build();
  }

  static final class CountingSink implements SampleSink {
    final Map<String, Long> lost = new TreeMap<>();

    @Override
    public void accept(ThreadSample sample) {}

    @Override
    public void lost(String reason) {
      lost.merge(reason, 1L, Long::sum);
    }
  }

  static final class RecordingSlots implements ProcessTicks.PlanSlots {
    final List<byte[]> plans = new ArrayList<>();

    @Override
    public void clearPlans(int pid) {
      plans.clear();
    }

    @Override
    public void setPlan(int pid, int index, byte[] encodedPlan) {
      assertEquals(plans.size(), index);
      plans.add(encodedPlan);
    }
  }

  @Test
  void theBudgetIsThreePlugInPlansOfTheFourTheProgramRuns() {
    assertEquals(3, RuntimePlans.BUDGET);
    assertEquals(4, ProcessTicks.MAX_PLANS);
    assertEquals(4, dev.polystack.host.bpf.TickCapture.MAX_PLANS);
  }

  @Test
  void theFourthPlanIsRefusedCountedOnceAndWarnedAboutOnce() {
    CapturePlan a1 = luajitShaped(0x7f00_0000_1000L);
    CapturePlan a2 = luajitShaped(0x7f00_0000_2000L);
    CapturePlan b = luajitShaped(0x7f00_0000_3000L);
    CapturePlan c = luajitShaped(0x7f00_0000_4000L);
    CapturePlan d = luajitShaped(0x7f00_0000_5000L);
    // Bindings come in no particular order (the host keeps them by module identity).
    List<RuntimePlans.Candidate> candidates = List.of(
        new RuntimePlans.Candidate("zeta", "/usr/lib/libz.so", 0x1000, d),
        new RuntimePlans.Candidate("beta", "/usr/lib/libb.so", 0x1000, b),
        new RuntimePlans.Candidate("alpha", "/usr/lib/liba2.so", 0x9000, a2),
        new RuntimePlans.Candidate("gamma", "/usr/lib/libc3.so", 0x1000, c),
        new RuntimePlans.Candidate("alpha", "/usr/lib/liba2.so", 0x1000, a1),
        // Equal to a kept plan: shares its slot, refuses nothing.
        new RuntimePlans.Candidate("alpha", "/usr/lib/liba9.so", 0x1000, a1),
        new RuntimePlans.Candidate("delta", "/usr/lib/libd.so", 0x1000, CapturePlan.NONE));
    List<String> warnings = new ArrayList<>();
    RuntimePlans plans = new RuntimePlans(4242, warnings::add);
    CountingSink sink = new CountingSink();

    List<CapturePlan> kept = plans.select(candidates, sink);
    assertEquals(List.of(a1, a2, b), kept, "by plug-in id, module path, code address");
    assertEquals(Map.of("capture_plan_refused", 2L), sink.lost, "gamma's and zeta's plans");
    assertEquals(1, warnings.size(), warnings.toString());
    assertTrue(warnings.get(0).startsWith("process 4242: capture plan of plug-in 'gamma'"
        + " (/usr/lib/libc3.so) not run at the tick: a process runs at most 3 plug-in plans"),
        warnings.get(0));

    // The host asks again every 100 ms: the same refusals are not counted again.
    List<RuntimePlans.Candidate> reversed = new ArrayList<>(candidates);
    java.util.Collections.reverse(reversed);
    assertEquals(kept, plans.select(reversed, sink));
    assertEquals(Map.of("capture_plan_refused", 2L), sink.lost);
    // A new plan beyond the budget is counted; the process already had its warning.
    CapturePlan e = luajitShaped(0x7f00_0000_6000L);
    List<RuntimePlans.Candidate> more = new ArrayList<>(candidates);
    more.add(new RuntimePlans.Candidate("epsilon", "/usr/lib/libe.so", 0x1000, e));
    assertEquals(kept, plans.select(more, sink));
    assertEquals(Map.of("capture_plan_refused", 3L), sink.lost);
    assertEquals(1, warnings.size());

    // What the kernel gets: exactly the kept plans, encoded, in that order.
    RecordingSlots slots = new RecordingSlots();
    assertEquals(kept, RuntimePlans.install(slots, 4242, kept, List.of(), sink));
    assertEquals(3, slots.plans.size());
    for (int i = 0; i < kept.size(); i++) {
      assertArrayEquals(PlanEncoder.encode(kept.get(i)), slots.plans.get(i));
    }
  }

  /**
   * An instance's several plans (API 2.0, {@code capturePlans()}) count one each against the
   * budget, kept in the instance's own order after the plug-in, module and code address.
   */
  @Test
  void anInstancesSeveralPlansCountOneEachInItsOrder() {
    CapturePlan first = luajitShaped(0x1000);
    CapturePlan second = luajitShaped(0x2000);
    CapturePlan third = luajitShaped(0x3000);
    CapturePlan other = luajitShaped(0x4000);
    List<String> warnings = new ArrayList<>();
    RuntimePlans plans = new RuntimePlans(7, warnings::add);
    CountingSink sink = new CountingSink();
    List<CapturePlan> kept = plans.select(List.of(
        new RuntimePlans.Candidate("py", "/usr/bin/python3", 0x4000, 2, third),
        new RuntimePlans.Candidate("lua", "/usr/bin/luajit", 0x4000, other),
        new RuntimePlans.Candidate("py", "/usr/bin/python3", 0x4000, 0, first),
        new RuntimePlans.Candidate("py", "/usr/bin/python3", 0x4000, 1, second)), sink);
    assertEquals(List.of(other, first, second), kept, "lua first by id, then py's in order");
    assertEquals(Map.of("capture_plan_refused", 1L), sink.lost, "py's third plan");
    assertTrue(warnings.get(0).startsWith("process 7: capture plan of plug-in 'py'"),
        warnings.toString());
  }

  @Test
  void withinTheBudgetNothingIsRefused() {
    List<String> warnings = new ArrayList<>();
    RuntimePlans plans = new RuntimePlans(1, warnings::add);
    CountingSink sink = new CountingSink();
    CapturePlan p = luajitShaped(0x10000);
    assertEquals(List.of(p), plans.select(
        List.of(new RuntimePlans.Candidate("luajit", "/usr/bin/luajit", 0x4000, p)), sink));
    assertEquals(Map.of(), sink.lost);
    assertEquals(List.of(), warnings);
  }
}
