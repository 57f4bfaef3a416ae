package dev.polystack.vdso;

import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.CallRecord;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.ProbeHit;
import dev.polystack.plugin.api.ProbeMonitor;
import dev.polystack.plugin.api.ProbeSite;
import dev.polystack.plugin.api.Register;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * Pairs entry and return hits into calls. A return matches the pending entry of the same thread
 * whose saved return address equals the return site's RIP and whose entry RSP + 8 equals RSP
 * after the {@code ret}; this stays right under recursion and signal handlers that call the same
 * function, where "last entry" would not. Completed calls are decoded with the function's
 * {@link Decoder}, outputs read at the return hit (see {@link OutputReader}).
 */
final class CallPairing implements ProbeMonitor {

  /** Deeper than any real nesting of vDSO calls (signal handlers); bounds memory per thread. */
  static final int MAX_PENDING_PER_THREAD = 64;

  private record Pending(ProbeHit entry, long returnAddress) {}

  private final Map<Integer, Deque<Pending>> pending = new HashMap<>();
  private final Map<String, Long> counters = new TreeMap<>();
  private final Map<String, Decoder> decoders = new HashMap<>();

  @Override
  public void onHit(ProbeHit hit, Consumer<CallRecord> completed) {
    if (hit.site().kind() == ProbeSite.Kind.ENTRY) {
      onEntry(hit);
    } else {
      onReturn(hit, completed);
    }
  }

  private void onEntry(ProbeHit hit) {
    long returnAddress;
    try {
      returnAddress = returnAddressAtEntry(hit);
    } catch (MemoryReadException e) {
      count("entry_without_return_address");
      return;
    }
    Deque<Pending> stack = pending.computeIfAbsent(hit.tid(), t -> new ArrayDeque<>());
    // A pending call at or below this entry's stack depth has returned already: its return hit
    // was missed (a sampling backend arms a new return site only after the first call from it).
    long rsp = hit.registers().sp();
    while (!stack.isEmpty() && stack.peekLast().entry().registers().sp() <= rsp) {
      stack.removeLast();
      count("return_missed");
    }
    if (stack.size() == MAX_PENDING_PER_THREAD) {
      stack.removeFirst();
      count("pending_overflow");
    }
    stack.addLast(new Pending(hit, returnAddress));
  }

  private static long returnAddressAtEntry(ProbeHit hit) throws MemoryReadException {
    if (hit.stack().length >= 8) {
      return Bytes.getLong(hit.stack(), 0);
    }
    if (hit.memory() == null) {
      throw new MemoryReadException(hit.registers().sp(), 8, "no stack captured");
    }
    return hit.memory().readLong(hit.registers().sp());
  }

  private void onReturn(ProbeHit hit, Consumer<CallRecord> completed) {
    Deque<Pending> stack = pending.get(hit.tid());
    long rip = hit.registers().pc();
    long rsp = hit.registers().sp();
    if (stack != null) {
      for (Iterator<Pending> it = stack.descendingIterator(); it.hasNext(); ) {
        Pending p = it.next();
        if (p.returnAddress() == rip && p.entry().registers().sp() + 8 == rsp) {
          it.remove();
          completed.accept(toRecord(p, hit));
          return;
        }
      }
    }
    count("return_without_entry");
  }

  private CallRecord toRecord(Pending p, ProbeHit exit) {
    ProbeHit entry = p.entry();
    Decoder decoder = decoders.computeIfAbsent(entry.site().function(), Decoders::forFunction);
    long rax = exit.registers().get(Register.RAX);
    long result = decoder.result(rax);
    Map<String, Object> outputs =
        decoder.outputs(entry.registers(), result, new OutputReader(exit));
    if (outputs == null && Decoders.hasDecoder(entry.site().function())) {
      count("outputs_not_captured");
    }
    return new CallRecord(entry.site().function(), entry.site().version(), entry.pid(),
        entry.tid(), decoder.arguments(entry.registers()), rax, result, decoder.errno(result),
        outputs, p.returnAddress(), entry.registers().sp(), entry.monotonicNanos(),
        Math.max(entry.monotonicNanos(), exit.monotonicNanos()));
  }

  @Override
  public void threadExited(int tid) {
    Deque<Pending> stack = pending.remove(tid);
    if (stack != null && !stack.isEmpty()) {
      counters.merge("unfinished_at_thread_exit", (long) stack.size(), Long::sum);
    }
  }

  @Override
  public Map<String, Long> getAndResetCounters() {
    Map<String, Long> out = Map.copyOf(counters);
    counters.clear();
    return out;
  }

  private void count(String reason) {
    counters.merge(reason, 1L, Long::sum);
  }
}
