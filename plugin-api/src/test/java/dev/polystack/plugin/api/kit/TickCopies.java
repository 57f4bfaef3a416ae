package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CaptureStep;
import dev.polystack.plugin.api.CapturedRegion;
import dev.polystack.plugin.api.Mapping;
import dev.polystack.plugin.api.PlanOutcome;
import dev.polystack.plugin.api.Registers;
import java.util.ArrayList;
import java.util.List;

/**
 * What the host's tick capture would copy of one thread, computed from a snapshot: the stack
 * window and the regions of the plug-in's capture plans, with the plan steps run as
 * docs/capture-plans.md states them (the kernel's interpreter, host/src/main/bpf/capture_plans.h,
 * is the reference): slots start at zero for each plan, a load of an unreadable address or a
 * failed check stops the plan and keeps what it copied, a copy goes page by page to the first
 * page no readable mapping holds, and the record holds at most 64 KiB.
 *
 * <p>A load reads the snapshot's recorded bytes (the thread's reads, then the process's); a
 * load of mapped memory the snapshot did not record stops the plan too, and says so, since the
 * kit cannot know the value the kernel would have read.
 */
final class TickCopies {
  /** The stack window: from the red zone under the stack pointer, {@code --stack-bytes}. */
  static final int RED_ZONE = 128;
  static final int STACK_BYTES = 16 << 10;
  /** One record (docs/capture-plans.md): its header, the stack, then the regions. */
  static final int RECORD_MAX = 64 << 10;
  static final int HEADER = 200;
  static final int REGION_HEADER = 16;
  private static final long PAGE = 4096;
  /** Where user space ends: a chain stops at a pointer at or above it, as the kernel's does. */
  private static final long USER_TOP = 1L << 47;

  /** A copied range of target memory; {@code plan} -1 for the stack window. */
  record Region(long address, long length, int plan, int step, String label) {
    boolean contains(long a) {
      return Long.compareUnsigned(a - address, length) < 0;
    }

    @Override
    public String toString() {
      return label + " [0x" + Long.toHexString(address) + ", 0x"
          + Long.toHexString(address + length) + ")";
    }
  }

  /**
   * Where and why a plan stopped before its end: {@code kind} as a walk would see it, null when
   * the kit stopped for want of what the snapshot does not hold (the kernel would have read on).
   */
  record Stop(int plan, int step, PlanOutcome.Stop kind, String reason) {
    boolean undecidable() {
      return kind == null;
    }

    @Override
    public String toString() {
      return "plan " + plan + " stopped at step " + step + ": " + reason;
    }
  }

  private final List<Region> regions;
  private final List<Stop> stops;

  private TickCopies(List<Region> regions, List<Stop> stops) {
    this.regions = List.copyOf(regions);
    this.stops = List.copyOf(stops);
  }

  List<Region> regions() {
    return regions;
  }

  List<Stop> stops() {
    return stops;
  }

  /**
   * What each of {@code plans} did, as a walk sees it through {@code ThreadContext.planOutcome};
   * a plan the kit could not run to a decision has none.
   */
  List<PlanOutcome> outcomes(List<CapturePlan> plans) {
    List<PlanOutcome> out = new ArrayList<>();
    for (int p = 0; p < plans.size(); p++) {
      int plan = p;
      Stop stop = stops.stream().filter(s -> s.plan() == plan).findFirst().orElse(null);
      if (stop != null && stop.undecidable()) {
        continue;
      }
      List<CapturedRegion> copied = regions.stream().filter(r -> r.plan() == plan)
          .map(r -> new CapturedRegion(r.address(), (int) r.length(), r.step(), r.label()))
          .toList();
      out.add(stop == null ? new PlanOutcome(plans.get(p), -1, PlanOutcome.Stop.NONE, copied)
          : new PlanOutcome(plans.get(p), stop.step(), stop.kind(), copied));
    }
    return out;
  }

  /** Whether every plan ran as the kernel would have run it on this memory. */
  boolean decidable() {
    return stops.stream().noneMatch(Stop::undecidable);
  }

  /** The region holding {@code address}, or null. */
  Region at(long address) {
    for (Region r : regions) {
      if (r.contains(address)) {
        return r;
      }
    }
    return null;
  }

  /** Bytes from {@code address} up to the end of the copied region holding it; 0 if none. */
  long coveredFrom(long address) {
    long best = 0;
    for (Region r : regions) {
      if (r.contains(address)) {
        best = Math.max(best, r.address() + r.length() - address);
      }
    }
    return best;
  }

  /**
   * @param tid the thread's id as the snapshot names it (polystack's pid namespace, which is
   *     the process's own unless it runs in another one)
   * @param threadPointer the thread's FS base, null when the case does not hold it
   */
  static TickCopies of(List<CapturePlan> plans, Registers regs, int tid, Long threadPointer,
      MemoryBlob thread, MemoryBlob process, List<Mapping> mappings) {
    List<Region> regions = new ArrayList<>();
    List<Stop> stops = new ArrayList<>();
    long stackStart = regs.sp() - RED_ZONE;
    long stack = readable(stackStart, STACK_BYTES, mappings);
    if (stack > 0) {
      regions.add(new Region(stackStart, stack, -1, -1, "stack"));
    }
    long[] offset = {align8(HEADER + stack)};
    for (int p = 0; p < plans.size(); p++) {
      Stop stop = run(p, plans.get(p), regs, tid, threadPointer, thread, process, mappings,
          regions, offset);
      if (stop != null) {
        stops.add(stop);
      }
    }
    return new TickCopies(regions, stops);
  }

  private static Stop run(int p, CapturePlan plan, Registers regs, int tid, Long threadPointer,
      MemoryBlob thread, MemoryBlob process, List<Mapping> mappings, List<Region> regions,
      long[] offset) {
    long[] s = new long[CapturePlan.SLOTS];
    List<CaptureStep> steps = plan.steps();
    for (int i = 0; i < steps.size(); i++) {
      CaptureStep step = steps.get(i);
      if (step instanceof CaptureStep.ReadRegister r) {
        s[r.into()] = regs.get(r.register());
      } else if (step instanceof CaptureStep.Constant c) {
        s[c.into()] = c.value();
      } else if (step instanceof CaptureStep.ThreadPointer tp) {
        if (threadPointer == null) {
          return new Stop(p, i, null, "ThreadPointer: the snapshot records no thread pointer"
              + " (written by a polystack before API 2.0; SnapshotCase.withThreadPointers"
              + " supplies it), so the kit cannot run what follows");
        }
        s[tp.into()] = threadPointer;
      } else if (step instanceof CaptureStep.ThreadId id) {
        s[id.into()] = tid;
      } else if (step instanceof CaptureStep.Add a) {
        s[a.into()] = s[a.from()] + a.addend();
      } else if (step instanceof CaptureStep.Subtract a) {
        s[a.into()] = s[a.from()] - s[a.minus()];
      } else if (step instanceof CaptureStep.Max m) {
        s[m.into()] = Long.compareUnsigned(s[m.a()], s[m.b()]) >= 0 ? s[m.a()] : s[m.b()];
      } else if (step instanceof CaptureStep.Min m) {
        s[m.into()] = Long.compareUnsigned(s[m.a()], s[m.b()]) <= 0 ? s[m.a()] : s[m.b()];
      } else if (step instanceof CaptureStep.And a) {
        s[a.into()] = s[a.from()] & a.mask();
      } else if (step instanceof CaptureStep.ShiftLeft x) {
        s[x.into()] = s[x.from()] << x.bits();
      } else if (step instanceof CaptureStep.ShiftRight x) {
        s[x.into()] = s[x.from()] >>> x.bits();
      } else if (step instanceof CaptureStep.Multiply x) {
        s[x.into()] = s[x.from()] * x.factor();
      } else if (step instanceof CaptureStep.AddSlots x) {
        s[x.into()] = s[x.a()] + s[x.b()];
      } else if (step instanceof CaptureStep.Load l) {
        long address = s[l.address()] + l.offset();
        Long v = load(address, l.size(), thread, process);
        if (v == null) {
          return unloaded(p, i, address, l.size(), mappings);
        }
        s[l.into()] = v;
      } else if (step instanceof CaptureStep.LoadIndexed l) {
        long address = s[l.base()] + s[l.index()] * l.scale() + l.offset();
        Long v = load(address, l.size(), thread, process);
        if (v == null) {
          return unloaded(p, i, address, l.size(), mappings);
        }
        s[l.into()] = v;
      } else if (step instanceof CaptureStep.Chain c) {
        long at = s[c.start()];
        for (int hop = 0; hop < c.maxHops() && at != 0 && Long.compareUnsigned(at, USER_TOP) < 0;
            hop++) {
          copy(p, i, at + c.copyOffset(), c.copyBytes(), c.label(), mappings, regions, offset);
          Long next = load(at + c.nextOffset(), 8, thread, process);
          if (next == null) {
            if (readable(at + c.nextOffset(), 8, mappings) == 8) {
              return new Stop(p, i, null, "chain's next pointer at 0x"
                  + Long.toHexString(at + c.nextOffset()) + " is mapped but not in the snapshot"
                  + " (the live walk never read it, so the kit cannot know where the chain goes)");
            }
            next = 0L;
          }
          at = next;
        }
        s[c.into()] = Long.compareUnsigned(at, USER_TOP) < 0 ? at : 0;
      } else if (step instanceof CaptureStep.KeepIfInRange k) {
        long v = s[k.value()];
        if (Long.compareUnsigned(s[k.low()], v) <= 0 && Long.compareUnsigned(v, s[k.high()]) < 0) {
          s[k.into()] = v;
        }
      } else if (step instanceof CaptureStep.Check c) {
        if ((s[c.a()] == s[c.b()]) != c.equal()) {
          return new Stop(p, i, PlanOutcome.Stop.CHECK, "check " + (c.equal() ? "==" : "!=")
              + " failed (0x" + Long.toHexString(s[c.a()]) + ", 0x"
              + Long.toHexString(s[c.b()]) + ")");
        }
      } else if (step instanceof CaptureStep.Copy c) {
        long length = c.maxBytes();
        if (c.length() != -1 && Long.compareUnsigned(s[c.length()], length) < 0) {
          length = s[c.length()];
        }
        copy(p, i, s[c.address()] + c.offset(), length, c.label(), mappings, regions, offset);
      }
    }
    return null;
  }

  /** Appends a region as the kernel does: page by page, bounded by what the record has left. */
  private static void copy(int p, int i, long address, long length, String label,
      List<Mapping> mappings, List<Region> regions, long[] offset) {
    long room = RECORD_MAX - offset[0] - REGION_HEADER;
    length = Math.max(0, Math.min(length, room));
    long got = readable(address, length, mappings);
    if (offset[0] + REGION_HEADER <= RECORD_MAX) {
      offset[0] = align8(offset[0] + REGION_HEADER + got);
      if (got > 0) {
        regions.add(new Region(address, got, p, i, label));
      }
    }
  }

  /** The recorded little-endian value at {@code address}, or null if the snapshot lacks it. */
  private static Long load(long address, int size, MemoryBlob thread, MemoryBlob process) {
    byte[] b = new byte[size];
    if (thread.copy(address, b, 0, size) != size && process.copy(address, b, 0, size) != size) {
      return null;
    }
    long v = 0;
    for (int k = size - 1; k >= 0; k--) {
      v = v << 8 | (b[k] & 0xff);
    }
    return v;
  }

  private static Stop unloaded(int p, int i, long address, int size, List<Mapping> mappings) {
    boolean mapped = readable(address, size, mappings) == size;
    return mapped
        ? new Stop(p, i, null, "load of 0x" + Long.toHexString(address) + ", mapped but not in"
            + " the snapshot (the live walk never read it, so the kit cannot know its value)")
        : new Stop(p, i, PlanOutcome.Stop.LOAD, "load of 0x" + Long.toHexString(address)
            + ", unreadable");
  }

  /** Bytes of [address, address + length) before the first page no readable mapping holds. */
  static long readable(long address, long length, List<Mapping> mappings) {
    long done = 0;
    while (done < length) {
      long at = address + done;
      if (!mapped(at, mappings)) {
        break;
      }
      long n = Math.min(PAGE - (at & (PAGE - 1)), length - done);
      done += n;
    }
    return done;
  }

  private static boolean mapped(long address, List<Mapping> mappings) {
    for (Mapping m : mappings) {
      if (m.readable() && m.contains(address)) {
        return true;
      }
    }
    return false;
  }

  private static long align8(long v) {
    return (v + 7) & ~7L;
  }
}
