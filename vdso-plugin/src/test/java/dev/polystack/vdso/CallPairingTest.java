package dev.polystack.vdso;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.polystack.plugin.api.CallRecord;
import dev.polystack.plugin.api.ProbeHit;
import dev.polystack.plugin.api.ProbeSite;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CallPairingTest {
  private static final ProbeSite ENTRY =
      new ProbeSite("sgx_enter_enclave", "LINUX_2.6", 0xc00, ProbeSite.Kind.ENTRY);
  private static final ProbeSite RETURN =
      new ProbeSite("sgx_enter_enclave", "LINUX_2.6", 0x401234, ProbeSite.Kind.RETURN);

  private static Registers regs(long rip, long rsp, long rax, long rdi) {
    long[] v = new long[Register.values().length];
    v[Register.RIP.ordinal()] = rip;
    v[Register.RSP.ordinal()] = rsp;
    v[Register.RAX.ordinal()] = rax;
    v[Register.RDI.ordinal()] = rdi;
    return Registers.of(v);
  }

  private static byte[] stackWithReturnAddress(long ra) {
    return ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(ra).array();
  }

  private static ProbeHit entry(int tid, long rsp, long ra, long t, long clockId) {
    return new ProbeHit(ENTRY, 10, tid, t, regs(0x7fff0c00L, rsp, 0, clockId),
        stackWithReturnAddress(ra), null);
  }

  private static ProbeHit ret(int tid, long rip, long rsp, long t, long rax) {
    return new ProbeHit(RETURN, 10, tid, t, regs(rip, rsp, rax, 0), new byte[0], null);
  }

  @Test
  void pairsNestedCallsByReturnAddressAndStack() {
    CallPairing pairing = new CallPairing();
    List<CallRecord> out = new ArrayList<>();
    pairing.onHit(entry(1, 0x1000, 0x401234, 100, 1), out::add);
    // A signal handler on the same thread calls it again before the first returns.
    pairing.onHit(entry(1, 0x0800, 0x405555, 150, 7), out::add);
    pairing.onHit(ret(1, 0x405555, 0x0808, 170, -22), out::add);
    pairing.onHit(ret(1, 0x401234, 0x1008, 300, 0), out::add);

    assertEquals(2, out.size());
    CallRecord inner = out.get(0);
    assertEquals("0x7", inner.arguments().get("arg0"));
    assertEquals("EINVAL", inner.errorName());
    assertEquals(20, inner.durationNanos());
    CallRecord outer = out.get(1);
    assertEquals("0x1", outer.arguments().get("arg0"));
    assertNull(outer.errorName());
    assertNull(outer.outputs(), "an export without a known prototype has no decoded outputs");
    assertEquals(200, outer.durationNanos());
    assertEquals(List.of("arg0", "arg1", "arg2", "arg3", "arg4", "arg5"),
        List.copyOf(outer.arguments().keySet()));
    assertEquals(Map.of(), pairing.getAndResetCounters());
  }

  @Test
  void countsWhatCannotBePaired() {
    CallPairing pairing = new CallPairing();
    List<CallRecord> out = new ArrayList<>();
    pairing.onHit(ret(2, 0x401234, 0x1008, 10, 0), out::add);
    pairing.onHit(new ProbeHit(ENTRY, 10, 2, 5, regs(0, 0x1000, 0, 0), new byte[0], null),
        out::add);
    pairing.onHit(entry(3, 0x1000, 0x401234, 1, 1), out::add);
    pairing.threadExited(3);
    for (int i = 0; i <= CallPairing.MAX_PENDING_PER_THREAD; i++) {
      pairing.onHit(entry(4, 0x1000 - 16L * i, 0x401234, i, 1), out::add);
    }

    assertEquals(0, out.size());
    assertEquals(Map.of("return_without_entry", 1L, "entry_without_return_address", 1L,
        "unfinished_at_thread_exit", 1L, "pending_overflow", 1L), pairing.getAndResetCounters());
    assertEquals(Map.of(), pairing.getAndResetCounters());
  }

  @Test
  void anEntryAtOrAboveAPendingOneMeansItsReturnWasMissed() {
    CallPairing pairing = new CallPairing();
    List<CallRecord> out = new ArrayList<>();
    pairing.onHit(entry(1, 0x1000, 0x401234, 100, 1), out::add);
    pairing.onHit(entry(1, 0x1000, 0x401234, 200, 1), out::add);
    pairing.onHit(ret(1, 0x401234, 0x1008, 230, 0), out::add);
    assertEquals(1, out.size());
    assertEquals(30, out.get(0).durationNanos());
    assertEquals(Map.of("return_missed", 1L), pairing.getAndResetCounters());
  }

  @Test
  void plannerFitsTwoFunctionsIntoFourSlotsAndSaysWhatItLeftOut() throws Exception {
    Inventory inventory = new Inventory(List.of(
        new Inventory.Export("clock_gettime", "__vdso_clock_gettime", "LINUX_2.6", true, 0xc00, 900),
        new Inventory.Export("gettimeofday", "__vdso_gettimeofday", "LINUX_2.6", true, 0xa00, 100),
        new Inventory.Export("time", "__vdso_time", "LINUX_2.6", true, 0xb00, 40)));
    var request = new dev.polystack.plugin.api.ProbeRequest(List.of(), 4);
    var plan = Planner.plan(inventory, request);
    assertEquals(List.of("clock_gettime", "gettimeofday"),
        plan.sites().stream().map(s -> s.function()).toList());
    assertEquals(1, plan.omitted().size());
    assertEquals(true, plan.omitted().get(0).startsWith("time: no hardware breakpoint slot left"));

    var named = Planner.plan(inventory,
        new dev.polystack.plugin.api.ProbeRequest(List.of("__vdso_time@LINUX_2.6"), 4));
    assertEquals(0xb00, named.sites().get(0).address());

    var e = org.junit.jupiter.api.Assertions.assertThrows(
        dev.polystack.plugin.api.ProbePlanException.class,
        () -> Planner.plan(inventory,
            new dev.polystack.plugin.api.ProbeRequest(List.of("clock_nanosleep"), 4)));
    assertEquals("unknown vDSO function 'clock_nanosleep'; the vDSO exports: "
        + "clock_gettime@LINUX_2.6, gettimeofday@LINUX_2.6, time@LINUX_2.6", e.getMessage());
    // The user's mistake, not the image's limit: the host reports it as bad usage (exit 2).
    org.junit.jupiter.api.Assertions.assertTrue(e.badRequest());
  }
}
