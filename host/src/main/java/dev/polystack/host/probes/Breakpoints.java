package dev.polystack.host.probes;

import dev.polystack.host.perf.PerfEvent;
import dev.polystack.host.perf.PerfEventAttr;
import dev.polystack.host.perf.PerfRingBuffer;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.plugin.api.ProbeSite;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The hardware breakpoints of one thread, all perf events owned by polystack's file descriptors:
 * when polystack dies, even by SIGKILL, the kernel closes them and nothing stays armed (unlike
 * debug registers poked through ptrace, which outlive their tracer and kill the target with
 * SIGTRAP). One event per entry site; the slots left over in the thread's budget of 4 are a
 * shared pool of return sites, placed at return addresses learned at entry and re-targeted
 * least-recently-used first when a new one shows up. glibc calls each vDSO function from one
 * place, so a pool rarely moves; a program calling from many places loses returns (counted).
 */
final class Breakpoints implements AutoCloseable {
  /** What {@link #watchReturn} did. */
  enum Placed {
    ALREADY,
    OPENED,
    RETARGETED,
    /** The function's own entry slot watches the return while the thread is inside it. */
    LENT,
    NO_SLOT
  }

  /** A call this thread is inside: where it returns, and the entry slot lent to watch it. */
  private record Pending(long returnAddress, long lentEntry) {}

  /** Calls in flight in one thread (signal handlers nest); deeper ones push out the oldest. */
  static final int MAX_PENDING = 64;

  /** Builds the attributes of a breakpoint at an address. */
  interface AttrFactory {
    PerfEventAttr at(long address);
  }

  private final int tid;
  private final AttrFactory attrs;
  private final int returnSlots;
  private final List<PerfEvent> entries = new ArrayList<>();
  private final Map<Long, PerfEvent> entryEvents = new LinkedHashMap<>();
  // Return address -> entry address of the entry slot lent to watch it.
  private final Map<Long, Long> lent = new LinkedHashMap<>();
  private final java.util.ArrayDeque<Pending> pending = new java.util.ArrayDeque<>();
  private final Map<Long, ProbeSite> entrySites;
  // Access order: the first key is the least recently used return site.
  private final LinkedHashMap<Long, PerfEvent> returns = new LinkedHashMap<>(8, 0.75f, true);
  private PerfEvent leader;
  private PerfRingBuffer ring;

  private Breakpoints(int tid, AttrFactory attrs, int returnSlots, Map<Long, ProbeSite> sites) {
    this.tid = tid;
    this.attrs = attrs;
    this.returnSlots = returnSlots;
    this.entrySites = sites;
  }

  /**
   * Arms every entry site of {@code plan} in {@code tid}. With {@code ringPagesLog2} >= 0 the
   * events sample into one ring (the first event's; the others redirect to it, so a thread's
   * records stay in order).
   */
  static Breakpoints arm(int tid, ResolvedPlan plan, int slots, AttrFactory attrs,
      int ringPagesLog2) throws SyscallException {
    Breakpoints b = new Breakpoints(tid, attrs, Math.max(0, slots - plan.entries().size()),
        plan.entries());
    try {
      for (long address : plan.entries().keySet()) {
        PerfEvent event = b.open(address, ringPagesLog2);
        b.entries.add(event);
        b.entryEvents.put(address, event);
      }
      return b;
    } catch (SyscallException | RuntimeException e) {
      b.close();
      throw e;
    }
  }

  int tid() {
    return tid;
  }

  PerfRingBuffer ring() {
    return ring;
  }

  PerfEvent leader() {
    return leader;
  }

  /** The entry site at {@code address}, or null. */
  ProbeSite entryAt(long address) {
    return entrySites.get(address);
  }

  /** True if a return breakpoint (a return slot or a lent entry slot) sits at {@code address}. */
  boolean watchesReturn(long address) {
    return returns.containsKey(address) || lent.containsKey(address);
  }

  /**
   * The stopped thread entered the function at {@code entry}, to return to {@code returnAddress}:
   * watches that address with a return slot no call in flight needs, or else lends the
   * function's own entry slot until the return (the thread cannot enter the same function again
   * before then, except from a signal handler, whose call is then not seen). Only for a backend
   * that holds the thread stopped at every hit: the slot moves before the call can return.
   */
  Placed enter(long entry, long returnAddress) throws SyscallException {
    if (pending.size() == MAX_PENDING) {
      restore(pending.removeLast()); // a call that never returned (longjmp out of a handler)
    }
    if (watchesReturn(returnAddress)) {
      pending.push(new Pending(returnAddress, lent.getOrDefault(returnAddress, 0L)));
      return Placed.ALREADY;
    }
    Long free = null;
    for (long address : returns.keySet()) { // least recently used first
      if (!inFlight(address)) {
        free = address;
        break;
      }
    }
    if (free != null || returns.size() < returnSlots) {
      Placed placed = free == null ? Placed.OPENED : Placed.RETARGETED;
      if (free == null) {
        returns.put(returnAddress, open(returnAddress, -1));
      } else {
        PerfEvent event = returns.remove(free);
        returns.put(returnAddress, move(event, returnAddress));
      }
      pending.push(new Pending(returnAddress, 0));
      return placed;
    }
    PerfEvent own = entryEvents.get(entry);
    if (own == null || lent.containsValue(entry)) {
      return Placed.NO_SLOT;
    }
    entryEvents.put(entry, move(own, returnAddress));
    lent.put(returnAddress, entry);
    pending.push(new Pending(returnAddress, entry));
    return Placed.LENT;
  }

  /**
   * The stopped thread is at {@code address} after a return: the call ended (and any call above
   * it that a longjmp left); a lent entry slot goes back to its entry before the thread runs.
   */
  void returned(long address) throws SyscallException {
    boolean known = false;
    for (Pending p : pending) {
      if (p.returnAddress() == address) {
        known = true;
        break;
      }
    }
    while (known && !pending.isEmpty()) {
      Pending p = pending.pop();
      restore(p);
      if (p.returnAddress() == address) {
        return;
      }
    }
  }

  private boolean inFlight(long returnAddress) {
    for (Pending p : pending) {
      if (p.returnAddress() == returnAddress) {
        return true;
      }
    }
    return false;
  }

  private void restore(Pending p) throws SyscallException {
    if (p.lentEntry() == 0 || inFlight(p.returnAddress())) {
      return; // still needed by a call below it (recursion through a handler)
    }
    lent.remove(p.returnAddress());
    PerfEvent event = entryEvents.get(p.lentEntry());
    entryEvents.put(p.lentEntry(), move(event, p.lentEntry()));
  }

  /** Moves a breakpoint to {@code address}, enabled; a new event if it cannot move in place. */
  private PerfEvent move(PerfEvent event, long address) throws SyscallException {
    try {
      event.modifyAttributes(attrs.at(address));
      // The kernel takes the new attributes' disabled bit too (hw_breakpoint_copy_attr), and
      // ours is set, since every event is opened disabled.
      event.enable();
      return event;
    } catch (SyscallException e) {
      PerfEvent fresh = open(address, -1);
      replace(event, fresh);
      closeQuietly(event);
      return fresh;
    }
  }

  private void replace(PerfEvent old, PerfEvent fresh) {
    int i = entries.indexOf(old);
    if (i >= 0) {
      entries.set(i, fresh);
    }
  }

  /** Makes sure a return breakpoint sits at {@code address}. */
  Placed watchReturn(long address) throws SyscallException {
    if (returns.get(address) != null) {
      return Placed.ALREADY;
    }
    if (returnSlots == 0) {
      return Placed.NO_SLOT;
    }
    if (returns.size() < returnSlots) {
      returns.put(address, open(address, -1));
      return Placed.OPENED;
    }
    Iterator<Map.Entry<Long, PerfEvent>> oldest = returns.entrySet().iterator();
    PerfEvent event = oldest.next().getValue();
    oldest.remove();
    try {
      event.modifyAttributes(attrs.at(address));
      // The kernel takes the new attributes' disabled bit too (hw_breakpoint_copy_attr), and
      // ours is set, since every event is opened disabled: without this, a re-targeted slot
      // stayed off and every call returning through it lost its return (issue 17).
      event.enable();
    } catch (SyscallException e) {
      // Not every kernel can move a breakpoint in place: a new event does the same.
      closeQuietly(event);
      event = open(address, -1);
    }
    returns.put(address, event);
    return Placed.RETARGETED;
  }

  private PerfEvent open(long address, int ringPagesLog2) throws SyscallException {
    PerfEvent event = PerfEvent.open(attrs.at(address), tid);
    try {
      if (leader == null && ringPagesLog2 >= 0) {
        ring = mapRing(event, ringPagesLog2);
        leader = event;
      } else if (leader != null) {
        event.setOutput(leader);
      }
      event.enable();
      return event;
    } catch (SyscallException | RuntimeException e) {
      closeQuietly(event);
      throw e;
    }
  }

  /** Halves the ring while the locked-memory allowance refuses it. */
  private static PerfRingBuffer mapRing(PerfEvent event, int log2) throws SyscallException {
    for (int l = log2; ; l--) {
      try {
        return event.mapRing(l);
      } catch (SyscallException e) {
        boolean limit = e.kind() == SyscallException.Kind.PERMISSION
            || e.kind() == SyscallException.Kind.NO_SPACE;
        if (!limit || l <= 1) {
          throw e;
        }
      }
    }
  }

  static PerfEventAttr.Builder base(long address) {
    return PerfEventAttr.executionBreakpoint(address);
  }

  private static void closeQuietly(PerfEvent e) {
    try {
      e.close();
    } catch (SyscallException ignored) {
      // close(2) of a perf fd only fails for a bad fd: nothing left to release
    }
  }

  @Override
  public void close() {
    // Redirected events first: the leader owns the ring they write to.
    for (PerfEvent e : returns.values()) {
      if (e != leader) {
        closeQuietly(e);
      }
    }
    returns.clear();
    for (PerfEvent e : entries) {
      if (e != leader) {
        closeQuietly(e);
      }
    }
    entries.clear();
    if (leader != null) {
      closeQuietly(leader);
    }
  }
}
