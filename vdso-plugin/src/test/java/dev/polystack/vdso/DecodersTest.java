package dev.polystack.vdso;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.polystack.plugin.api.CallRecord;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.ProbeHit;
import dev.polystack.plugin.api.ProbeSite;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.RemoteMemory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DecodersTest {
  private static final long RA = 0x401234;
  private static final long ENTRY_RSP = 0x7ffd0000L;
  private static final long RETURN_RSP = ENTRY_RSP + 8;

  private static Registers regs(long rip, long rsp, long rax, long... args) {
    long[] v = new long[Register.values().length];
    v[Register.RIP.ordinal()] = rip;
    v[Register.RSP.ordinal()] = rsp;
    v[Register.RAX.ordinal()] = rax;
    for (int i = 0; i < args.length; i++) {
      v[Decoders.ARGUMENTS[i].ordinal()] = args[i];
    }
    return Registers.of(v);
  }

  private static ByteBuffer le(int size) {
    return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** Entry then return of {@code function}; {@code exitStack} is copied from RETURN_RSP up. */
  private static CallRecord call(String function, long rax, byte[] exitStack, RemoteMemory memory,
      long... args) {
    CallPairing pairing = new CallPairing();
    List<CallRecord> out = new ArrayList<>();
    ProbeSite entry = new ProbeSite(function, "LINUX_2.6", 0xc00, ProbeSite.Kind.ENTRY);
    ProbeSite ret = new ProbeSite(function, "LINUX_2.6", RA, ProbeSite.Kind.RETURN);
    pairing.onHit(new ProbeHit(entry, 5, 6, 1000, regs(0xc00, ENTRY_RSP, 0, args),
        le(8).putLong(RA).array(), null), out::add);
    pairing.onHit(new ProbeHit(ret, 5, 6, 1500, regs(RA, RETURN_RSP, rax), exitStack, memory),
        out::add);
    assertEquals(1, out.size());
    return out.get(0);
  }

  @Test
  void namesStaticAndDynamicClocks() {
    assertEquals("CLOCK_REALTIME", ClockIds.name(0));
    assertEquals("CLOCK_MONOTONIC", ClockIds.name(1));
    assertEquals("CLOCK_PROCESS_CPUTIME_ID", ClockIds.name(2));
    assertEquals("CLOCK_THREAD_CPUTIME_ID", ClockIds.name(3));
    assertEquals("CLOCK_MONOTONIC_RAW", ClockIds.name(4));
    assertEquals("CLOCK_REALTIME_COARSE", ClockIds.name(5));
    assertEquals("CLOCK_MONOTONIC_COARSE", ClockIds.name(6));
    assertEquals("CLOCK_BOOTTIME", ClockIds.name(7));
    assertEquals("CLOCK_TAI", ClockIds.name(11));
    assertEquals("CLOCK_999", ClockIds.name(999));
    // MAKE_PROCESS_CPUCLOCK(1234, CPUCLOCK_SCHED), MAKE_THREAD_CPUCLOCK(77, PROF), FD_TO_CLOCKID(5)
    assertEquals("PROCESS_CPUCLOCK(pid=1234, SCHED)", ClockIds.name((~1234 << 3) | 2));
    assertEquals("THREAD_CPUCLOCK(tid=77, PROF)", ClockIds.name((~77 << 3) | 4));
    assertEquals("FD_CLOCK(fd=5)", ClockIds.name((~5 << 3) | 3));
  }

  @Test
  void clockGettimeReadsTheTimespecFromTheReturnStackWindow() {
    long tp = RETURN_RSP + 32;
    byte[] stack = le(64).putLong(32, 1_700_000_000L).putLong(40, 123_456_789L).array();
    CallRecord r = call("clock_gettime", 0, stack, null, 1, tp);
    assertEquals(1, r.arguments().get("clockid"));
    assertEquals("CLOCK_MONOTONIC", r.arguments().get("clock"));
    assertEquals("0x" + Long.toHexString(tp), r.arguments().get("tp"));
    assertEquals(Map.of("tp", Map.of("tv_sec", 1_700_000_000L, "tv_nsec", 123_456_789L)),
        r.outputs());
    assertEquals(0, r.result());
    assertNull(r.errorName());
    assertEquals(500, r.durationNanos());
  }

  @Test
  void anOutputOutsideTheWindowIsNotCapturedNeverGuessed() {
    byte[] stack = new byte[64];
    assertNull(call("clock_gettime", 0, stack, null, 0, RETURN_RSP + 56).outputs(),
        "straddles the end of the window");
    assertNull(call("clock_gettime", 0, stack, null, 0, RETURN_RSP - 16).outputs(),
        "below the stack pointer at return");
    assertNull(call("clock_gettime", 0, stack, null, 0, 0x600000).outputs(), "heap");
  }

  @Test
  void anIntResultIgnoresTheUpperHalfOfRaxAndFailuresWriteNothing() {
    CallRecord r = call("clock_gettime", 0x12345678ffffffeaL, new byte[0], null, 12345, 0x600000);
    assertEquals(-22, r.result());
    assertEquals("EINVAL", r.errorName());
    assertEquals(0x12345678ffffffeaL, r.returnRegister());
    assertEquals(Map.of(), r.outputs());
    assertEquals("CLOCK_12345", r.arguments().get("clock"));
  }

  @Test
  void aStoppedThreadIsReadDirectly() {
    byte[] heap = le(16).putLong(7).putLong(8).array();
    RemoteMemory memory = (address, dst, offset, length) -> {
      if (address != 0x600000) {
        throw new MemoryReadException(address, length, "unmapped");
      }
      System.arraycopy(heap, 0, dst, offset, Math.min(length, heap.length));
      return Math.min(length, heap.length);
    };
    CallRecord r = call("clock_getres", 0, new byte[0], memory, 0, 0x600000);
    assertEquals(Map.of("res", Map.of("tv_sec", 7L, "tv_nsec", 8L)), r.outputs());
    assertNull(call("clock_getres", 0, new byte[0], memory, 0, 0x700000).outputs());
  }

  @Test
  void gettimeofdayTimeAndGetcpu() {
    byte[] stack = le(48).putLong(0, 99).putLong(8, 42).putInt(16, -60).putInt(20, 1)
        .putInt(24, 3).putInt(28, 0).putLong(32, 1_700_000_001L).array();
    CallRecord tod = call("gettimeofday", 0, stack, null, RETURN_RSP, RETURN_RSP + 16);
    Map<String, Object> expected = new LinkedHashMap<>();
    expected.put("tv", Map.of("tv_sec", 99L, "tv_usec", 42L));
    expected.put("tz", Map.of("tz_minuteswest", -60, "tz_dsttime", 1));
    assertEquals(expected, tod.outputs());

    CallRecord time = call("time", 1_700_000_001L, stack, null, RETURN_RSP + 32);
    assertEquals(1_700_000_001L, time.result());
    assertEquals(Map.of("tloc", 1_700_000_001L), time.outputs());
    assertNull(time.errorName());
    assertEquals(Map.of(), call("time", 5, stack, null, 0).outputs());

    CallRecord cpu = call("getcpu", 0, stack, null, RETURN_RSP + 24, RETURN_RSP + 28, 0);
    assertEquals(Map.of("cpu", 3L, "node", 0L), cpu.outputs());
  }

  /**
   * An ordinary getrandom call passes the thread's random state as opaque_state: a copy through
   * it at every return would put the caller's next random bytes into the ring and the heap.
   */
  @Test
  void getrandomCopiesNothingAtTheReturnSoTheRandomStateNeverLeavesTheTarget() {
    assertEquals(List.of(), Decoders.forFunction("getrandom").copies());
  }

  @Test
  void getrandomDecodesTheParameterQueryAndKeepsTheWidthOfItsResult() {
    long state = RETURN_RSP + 8;
    byte[] stack = le(32).putInt(8, 256).putInt(12, 3).putInt(16, 0x28).array();
    CallRecord q = call("getrandom", 0, stack, null, 0, 0, 0, state, -1L);
    assertEquals("~0UL", q.arguments().get("opaque_len"));
    Map<String, Object> params = new LinkedHashMap<>();
    params.put("size_of_opaque_state", 256L);
    params.put("mmap_prot", "PROT_READ|PROT_WRITE");
    params.put("mmap_flags", "MAP_DROPPABLE|MAP_ANONYMOUS");
    assertEquals(Map.of("opaque_params", params), q.outputs());

    CallRecord bytes = call("getrandom", 0x1_0000_0000L, stack, null, 0x600000, 0x1_0000_0000L,
        1, 0x700000, 256);
    assertEquals(0x1_0000_0000L, bytes.result(), "ssize_t: all 64 bits");
    assertEquals("GRND_NONBLOCK", bytes.arguments().get("flags"));
    assertEquals(Map.of(), bytes.outputs());

    CallRecord bad = call("getrandom", -22, stack, null, 0x600000, 16, 0x40, 0, 0);
    assertEquals("EINVAL", bad.errorName());
    assertEquals("0x40", bad.arguments().get("flags"));
  }
}
