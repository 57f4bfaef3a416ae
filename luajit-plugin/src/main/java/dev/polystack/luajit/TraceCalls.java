package dev.polystack.luajit;

import dev.polystack.plugin.api.Bytes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;

/**
 * The calls a looping trace's machine code makes, each call of the loop body paired with its
 * twin in the pre-roll. LuaJIT compiles a loop as the first iteration (the pre-roll, holding
 * every snapshot the recorder took) followed by the loop body (lj_opt_loop.c: copy-substituted,
 * with invariant guards hoisted and snapshots without a guard between them merged away), so a
 * call the loop makes is best placed where its twin is. Instructions keep their order through
 * the copy, so the n-th call to a target in the loop body is the n-th call to it in the
 * pre-roll when both parts call it as often; only such calls are paired, which also leaves out
 * byte patterns that only look like a call (a random rel32 names a real target once in 2^32).
 *
 * <p>Calls are recognised by their encoding as lj_emit_x86.h writes them: {@code call rel32},
 * or {@code call rax} right after rax is loaded with the target (mov imm64/imm32, lea
 * rip-relative or DISPATCH-relative).
 */
final class TraceCalls {
  private static final int CALL_REL32 = 0xE8;
  /** Keys for targets loaded relative to DISPATCH (r14): tagged, never a user address. */
  private static final long DISPATCH_TAG = 1L << 62;

  private final int loop;
  /** Return offsets of every call, ascending. */
  private final int[] returns;
  /** Return offsets of paired calls, ascending: loop body and pre-roll, same index = twins. */
  private final int[] loopReturns;
  private final int[] preRollReturns;

  private TraceCalls(int loop, int[] returns, int[] loopReturns, int[] preRollReturns) {
    this.loop = loop;
    this.returns = returns;
    this.loopReturns = loopReturns;
    this.preRollReturns = preRollReturns;
  }

  /**
   * The calls of {@code code}, a trace's machine code at {@code mcode} with its loop at
   * {@code mcloop} (0: none). A call whose target is not code ({@code isCode}) is a byte
   * pattern that only looks like one.
   */
  static TraceCalls of(byte[] code, long mcode, int mcloop, LongPredicate isCode) {
    Map<Long, List<Integer>> byTarget = new HashMap<>();
    List<Integer> all = new ArrayList<>();
    for (int ret = 5; ret <= code.length; ret++) {
      long target = target(code, mcode, ret);
      if (target != 0 && ((target & DISPATCH_TAG) != 0 || isCode.test(target))) {
        byTarget.computeIfAbsent(target, k -> new ArrayList<>()).add(ret);
        all.add(ret);
      }
    }
    List<int[]> pairs = new ArrayList<>();
    for (List<Integer> returns : byTarget.values()) {
      List<Integer> pre = returns.stream().filter(r -> r <= mcloop).toList();
      List<Integer> body = returns.stream().filter(r -> r > mcloop).toList();
      if (mcloop > 0 && !body.isEmpty() && pre.size() == body.size()) {
        for (int i = 0; i < body.size(); i++) {
          pairs.add(new int[] {body.get(i), pre.get(i)});
        }
      }
    }
    pairs.sort((a, b) -> Integer.compare(a[0], b[0]));
    int[] loop = new int[pairs.size()];
    int[] preRoll = new int[pairs.size()];
    for (int i = 0; i < pairs.size(); i++) {
      loop[i] = pairs.get(i)[0];
      preRoll[i] = pairs.get(i)[1];
    }
    return new TraceCalls(mcloop, all.stream().mapToInt(Integer::intValue).toArray(), loop,
        preRoll);
  }

  /** Whether machine-code offset {@code ofs} lies in the loop body. */
  boolean inLoop(int ofs) {
    return loop > 0 && ofs >= loop;
  }

  /**
   * The pre-roll twin of the loop-body call returning to {@code ret}; {@code ret} itself for a
   * paired call of the pre-roll; else -1.
   */
  int twin(int ret) {
    int i = Arrays.binarySearch(loopReturns, ret);
    if (i >= 0) {
      return preRollReturns[i];
    }
    for (int pre : preRollReturns) {
      if (pre == ret) {
        return ret;
      }
    }
    return -1;
  }

  /**
   * For code of the loop body at {@code ofs} between two paired calls that both lie in
   * [{@code from}, {@code limit}): the twins of the call before and of the call after, else
   * null. The IR keeps its order in the machine code, so such code is code of whatever made
   * both calls when one function did.
   */
  int[] twinsAround(int ofs, int from, int limit) {
    int i = Arrays.binarySearch(loopReturns, ofs);
    int after = i >= 0 ? i + 1 : -i - 1;
    int before = after - 1;
    if (before < 0 || after >= loopReturns.length || loopReturns[before] < from
        || loopReturns[after] - 1 >= limit) {
      return null;
    }
    return new int[] {preRollReturns[before], preRollReturns[after]};
  }

  /**
   * For code at {@code ofs} between two calls that both lie in [{@code from}, {@code limit}):
   * the return offsets of the call before and of the call after, else null.
   */
  int[] callsAround(int ofs, int from, int limit) {
    int i = Arrays.binarySearch(returns, ofs);
    int after = i >= 0 ? i + 1 : -i - 1;
    int before = after - 1;
    if (before < 0 || after >= returns.length || returns[before] < from
        || returns[after] - 1 >= limit) {
      return null;
    }
    return new int[] {returns[before], returns[after]};
  }

  /**
   * The index of the call returning to {@code ret} among the calls made in machine-code
   * offsets [from, to), and how many there are; index -1 if it is none of them.
   */
  int[] index(int ret, int from, int to) {
    int count = 0;
    int index = -1;
    for (int r : returns) {
      if (r - 1 >= from && r - 1 < to) {
        if (r == ret) {
          index = count;
        }
        count++;
      }
    }
    return new int[] {index, count};
  }

  /** The target (or a key for it) of a call whose return address is at {@code ret}, or 0. */
  static long target(byte[] code, long mcode, int ret) {
    if (ret >= 2 && ret <= code.length && (code[ret - 2] & 0xff) == 0xFF
        && (code[ret - 1] & 0xff) == 0xD0) { // call rax
      int at = ret - 2;
      if (at >= 10 && (code[at - 10] & 0xff) == 0x48 && (code[at - 9] & 0xff) == 0xB8) {
        return Bytes.getLong(code, at - 8); // mov rax, imm64
      }
      if (at >= 7 && (code[at - 7] & 0xff) == 0x48 && (code[at - 6] & 0xff) == 0x8D
          && (code[at - 5] & 0xff) == 0x05) { // lea rax, [rip+disp32]
        return mcode + at + Bytes.getInt(code, at - 4);
      }
      if (at >= 7 && (code[at - 7] & 0xff) == 0x49 && (code[at - 6] & 0xff) == 0x8D
          && (code[at - 5] & 0xff) == 0x86) { // lea rax, [r14+disp32]: DISPATCH-relative
        return DISPATCH_TAG | (Bytes.getInt(code, at - 4) & 0xffffffffL);
      }
      if (at >= 7 && (code[at - 7] & 0xff) == 0x48 && (code[at - 6] & 0xff) == 0xC7
          && (code[at - 5] & 0xff) == 0xC0) { // mov rax, simm32
        return Bytes.getInt(code, at - 4);
      }
      if (at >= 5 && (code[at - 5] & 0xff) == 0xB8) { // mov eax, imm32
        return Bytes.getInt(code, at - 4) & 0xffffffffL;
      }
    }
    if (ret >= 5 && ret <= code.length && (code[ret - 5] & 0xff) == CALL_REL32) {
      return mcode + ret + Bytes.getInt(code, ret - 4);
    }
    return 0;
  }
}
