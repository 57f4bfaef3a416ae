package dev.polystack.luajit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A looping trace's calls paired across pre-roll and loop body, on machine code laid out the
 * way lj_emit_x86.h writes calls: each loop call placed where its twin is, calls made in one part
 * only left unpaired, and byte patterns that only look like calls (a target that is no code)
 * ignored.
 */
class TraceCallsTest {
  static final long MCODE = 0x7f0000001000L;
  static final long A = 0x7f0000200000L;
  static final long B = 0x7f0000300000L;
  static final long FAR = 0x7fee00001234L;
  static final long ONLY_IN_LOOP = 0x7f0000400000L;
  static final int LOOP = 100;
  static final Set<Long> CODE = Set.of(A, B, FAR, ONLY_IN_LOOP);

  /** call rel32 whose return address is {@code ret}. */
  private static void callRel32(byte[] code, int ret, long target) {
    code[ret - 5] = (byte) 0xE8;
    int rel = (int) (target - (MCODE + ret));
    for (int i = 0; i < 4; i++) {
      code[ret - 4 + i] = (byte) (rel >>> (8 * i));
    }
  }

  /** mov rax, imm64; call rax, returning to {@code ret}. */
  private static void callFar(byte[] code, int ret, long target) {
    int at = ret - 12;
    code[at] = 0x48;
    code[at + 1] = (byte) 0xB8;
    for (int i = 0; i < 8; i++) {
      code[at + 2 + i] = (byte) (target >>> (8 * i));
    }
    code[ret - 2] = (byte) 0xFF;
    code[ret - 1] = (byte) 0xD0;
  }

  private static byte[] trace() {
    byte[] code = new byte[200];
    callRel32(code, 15, A);
    callRel32(code, 35, B);
    callFar(code, 60, FAR);
    callRel32(code, 115, A);
    callRel32(code, 135, B);
    callFar(code, 160, FAR);
    callRel32(code, 175, ONLY_IN_LOOP);
    code[185] = (byte) 0xE8; // looks like a call, to no code
    return code;
  }

  @Test
  void loopCallsArePlacedAtTheirTwinsInThePreRoll() {
    byte[] code = trace();
    TraceCalls calls = TraceCalls.of(code, MCODE, LOOP, CODE::contains);
    assertEquals(15, calls.twin(115));
    assertEquals(35, calls.twin(135));
    assertEquals(60, calls.twin(160));
    assertEquals(35, calls.twin(35), "a paired pre-roll call is its own twin");
    assertEquals(-1, calls.twin(175), "a call only the loop makes has no twin");
    assertEquals(-1, calls.twin(190), "not a call");
    assertEquals(A, TraceCalls.target(code, MCODE, 115));
    assertEquals(FAR, TraceCalls.target(code, MCODE, 160));
  }

  @Test
  void codeBetweenTwoCallsIsPlacedBetweenTheirTwins() {
    TraceCalls calls = TraceCalls.of(trace(), MCODE, LOOP, CODE::contains);
    assertArrayEquals(new int[] {15, 35}, calls.twinsAround(120, LOOP, 200));
    assertNull(calls.twinsAround(105, LOOP, 200), "no call before it in the range");
    assertNull(calls.twinsAround(120, 118, 200), "the call before is in another range");
    assertNull(calls.twinsAround(120, LOOP, 130), "the call after is in another range");
    assertArrayEquals(new int[] {115, 135}, calls.callsAround(120, LOOP, 200));
  }

  @Test
  void callsAreCountedInOrderWithinARange() {
    TraceCalls calls = TraceCalls.of(trace(), MCODE, LOOP, CODE::contains);
    assertArrayEquals(new int[] {1, 3}, calls.index(35, 0, LOOP));
    assertArrayEquals(new int[] {3, 4}, calls.index(175, LOOP, 200),
        "unpaired loop calls are calls too; the fake one is not");
    assertArrayEquals(new int[] {-1, 2}, calls.index(60, 0, 40));
  }
}
