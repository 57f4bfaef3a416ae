package dev.polystack.host.probes;

import dev.polystack.host.perf.PerfConstants;
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
    NO_SLOT
  }

  /** Builds the attributes of a breakpoint at an address. */
  interface AttrFactory {
    PerfEventAttr at(long address);
  }

  private final int tid;
  private final AttrFactory attrs;
  private final int returnSlots;
  private final List<PerfEvent> entries = new ArrayList<>();
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
        b.entries.add(b.open(address, ringPagesLog2));
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

  /** True if a return breakpoint currently sits at {@code address}. */
  boolean watchesReturn(long address) {
    return returns.containsKey(address);
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
    return PerfEventAttr.builder()
        .breakpoint(PerfConstants.HW_BREAKPOINT_X, address, 8)
        .samplePeriod(1)
        .excludeKernel(true)
        .excludeHv(true)
        // The vDSO image of this process dies with exec: never let a site outlive it.
        .removeOnExec(true)
        .disabled(true);
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
