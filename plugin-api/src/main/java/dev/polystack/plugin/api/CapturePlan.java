package dev.polystack.plugin.api;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a runtime needs read at the sampling tick, declared as data: a short, bounded program of
 * {@link CaptureStep steps} over the thread's registers, constants the plug-in learned for the
 * process, loads, checks and copies of memory regions. The host compiles it for its tick-time
 * capture (eBPF) and runs it for every sample of the process, in the kernel, before the thread
 * runs on; the walk then reads the copied regions as they were at the tick, as it would read a
 * stopped thread. A plug-in never writes kernel code and the host never learns the runtime's
 * layout. Reads outside the copies still work (they go to the live process, after the tick),
 * so a plan only has to cover what changes between ticks.
 *
 * <p>Since API 1.1. Bounds: {@link #MAX_STEPS} steps, {@link #SLOTS} slots,
 * {@link #MAX_COPIES} copy and chain steps, a copy of at most {@link #MAX_COPY_BYTES}, a chain
 * of at most {@link #MAX_CHAIN_HOPS} records of {@link #MAX_CHAIN_COPY_BYTES} each. A process
 * runs at most 3 distinct plug-in plans, kept by plug-in id; one beyond is not run, and is
 * counted and warned about (docs/capture-plans.md, "Bounds").
 *
 * @since 1.1
 */
public final class CapturePlan {
  /** 32 before API 1.8; a plan of more steps needs a host at 1.8 or later. */
  public static final int MAX_STEPS = 48;
  public static final int SLOTS = 8;
  public static final int MAX_COPIES = 8;
  public static final int MAX_COPY_BYTES = 16 << 10;
  /** Most records one {@link CaptureStep.Chain} step visits. @since 1.6 */
  public static final int MAX_CHAIN_HOPS = 16;
  /** Most bytes a chain copies of each record. @since 1.6 */
  public static final int MAX_CHAIN_COPY_BYTES = 4096;
  /** Largest {@link CaptureStep.LoadIndexed} scale. @since 1.6 */
  public static final int MAX_SCALE = 4096;

  /** No plan: the runtime's reads go to the live process after the tick. */
  public static final CapturePlan NONE = new CapturePlan(List.of());

  private final List<CaptureStep> steps;

  /** @throws IllegalArgumentException if the steps exceed a bound */
  public CapturePlan(List<CaptureStep> steps) {
    this.steps = List.copyOf(steps);
    if (this.steps.size() > MAX_STEPS) {
      throw new IllegalArgumentException(
          "a capture plan has at most " + MAX_STEPS + " steps, got " + this.steps.size());
    }
    long copies = this.steps.stream()
        .filter(s -> s instanceof CaptureStep.Copy || s instanceof CaptureStep.Chain)
        .count();
    if (copies > MAX_COPIES) {
      throw new IllegalArgumentException(
          "a capture plan has at most " + MAX_COPIES + " copies, got " + copies);
    }
  }

  public List<CaptureStep> steps() {
    return steps;
  }

  public boolean isEmpty() {
    return steps.isEmpty();
  }

  public static Builder builder() {
    return new Builder();
  }

  static void checkSlot(int slot) {
    if (slot < 0 || slot >= SLOTS) {
      throw new IllegalArgumentException("slot must be 0.." + (SLOTS - 1) + ", got " + slot);
    }
  }

  static void checkLoadSize(int size) {
    if (size != 1 && size != 2 && size != 4 && size != 8) {
      throw new IllegalArgumentException("load size must be 1, 2, 4 or 8, got " + size);
    }
  }

  static void checkShift(int bits) {
    if (bits < 0 || bits > 63) {
      throw new IllegalArgumentException("shift must be 0..63 bits, got " + bits);
    }
  }

  static void checkLabel(String label) {
    Objects.requireNonNull(label, "label");
    if (label.isEmpty() || label.length() > 64) {
      throw new IllegalArgumentException("copy label must be 1..64 characters");
    }
  }

  @Override
  public boolean equals(Object o) {
    return o == this || o instanceof CapturePlan other && steps.equals(other.steps);
  }

  @Override
  public int hashCode() {
    return steps.hashCode();
  }

  @Override
  public String toString() {
    return "CapturePlan" + steps;
  }

  /**
   * Builds a plan with named values; a name gets a slot on first assignment and keeps it.
   * Reading a name never assigned is an error, as is a ninth name.
   */
  public static final class Builder {
    private final List<CaptureStep> steps = new ArrayList<>();
    private final Map<String, Integer> slots = new LinkedHashMap<>();

    private Builder() {}

    public Builder register(String into, Register register) {
      return add(new CaptureStep.ReadRegister(assign(into), register));
    }

    public Builder constant(String into, long value) {
      return add(new CaptureStep.Constant(assign(into), value));
    }

    /** @since 1.5 */
    public Builder threadPointer(String into) {
      return add(new CaptureStep.ThreadPointer(assign(into)));
    }

    /**
     * {@code into} = the sampled thread's id in its process's pid namespace ({@link
     * CaptureStep.ThreadId}).
     *
     * @since 2.0
     */
    public Builder threadId(String into) {
      return add(new CaptureStep.ThreadId(assign(into)));
    }

    public Builder add(String into, String from, long addend) {
      return add(new CaptureStep.Add(assign(into), read(from), addend));
    }

    public Builder subtract(String into, String from, String minus) {
      return add(new CaptureStep.Subtract(assign(into), read(from), read(minus)));
    }

    public Builder max(String into, String a, String b) {
      return add(new CaptureStep.Max(assign(into), read(a), read(b)));
    }

    public Builder min(String into, String a, String b) {
      return add(new CaptureStep.Min(assign(into), read(a), read(b)));
    }

    public Builder and(String into, String from, long mask) {
      return add(new CaptureStep.And(assign(into), read(from), mask));
    }

    /** @since 1.6 */
    public Builder shiftLeft(String into, String from, int bits) {
      return add(new CaptureStep.ShiftLeft(assign(into), read(from), bits));
    }

    /** Logical shift. @since 1.6 */
    public Builder shiftRight(String into, String from, int bits) {
      return add(new CaptureStep.ShiftRight(assign(into), read(from), bits));
    }

    /** @since 1.6 */
    public Builder multiply(String into, String from, long factor) {
      int f = read(from);
      return add(new CaptureStep.Multiply(assign(into), f, factor));
    }

    /** {@code into = a + b}. @since 1.6 */
    public Builder addSlots(String into, String a, String b) {
      int x = read(a);
      int y = read(b);
      return add(new CaptureStep.AddSlots(assign(into), x, y));
    }

    /** {@code into = *(u<size*8> *)(base + index * scale + offset)}. @since 1.6 */
    public Builder loadIndexed(String into, String base, String index, int scale, long offset,
        int size) {
      int b = read(base);
      int i = read(index);
      return add(new CaptureStep.LoadIndexed(assign(into), b, i, scale, offset, size));
    }

    /**
     * Follows records from {@code start} (see {@link CaptureStep.Chain}); {@code into} gets
     * where the chain would go next.
     *
     * @since 1.6
     */
    public Builder chain(String into, String start, long copyOffset, int copyBytes,
        int nextOffset, int maxHops, String label) {
      int from = read(start);
      return add(new CaptureStep.Chain(assign(into), from, copyOffset, copyBytes, nextOffset,
          maxHops, label));
    }

    /** {@code into = *(u<size*8> *)(address + offset)}. */
    public Builder load(String into, String address, long offset, int size) {
      int from = read(address);
      return add(new CaptureStep.Load(assign(into), from, offset, size));
    }

    /** {@code into = value} when {@code low <= value < high}; {@code into} must hold a value. */
    public Builder keepIfInRange(String into, String value, String low, String high) {
      return add(new CaptureStep.KeepIfInRange(read(into), read(value), read(low), read(high)));
    }

    public Builder checkEquals(String a, String b) {
      return add(new CaptureStep.Check(read(a), read(b), true));
    }

    public Builder checkNotEquals(String a, String b) {
      return add(new CaptureStep.Check(read(a), read(b), false));
    }

    /** Copies {@code maxBytes} from {@code address + offset}. */
    public Builder copy(String address, long offset, int maxBytes, String label) {
      return add(new CaptureStep.Copy(read(address), offset, -1, maxBytes, label));
    }

    /** Copies {@code min(length, maxBytes)} bytes from {@code address + offset}. */
    public Builder copy(String address, long offset, String length, int maxBytes, String label) {
      return add(new CaptureStep.Copy(read(address), offset, read(length), maxBytes, label));
    }

    public CapturePlan build() {
      return new CapturePlan(steps);
    }

    private Builder add(CaptureStep step) {
      steps.add(step);
      return this;
    }

    private int assign(String name) {
      Integer slot = slots.get(name);
      if (slot != null) {
        return slot;
      }
      if (slots.size() >= SLOTS) {
        throw new IllegalArgumentException("a capture plan has " + SLOTS + " slots; '" + name
            + "' would be one more than " + slots.keySet());
      }
      slots.put(name, slots.size());
      return slots.size() - 1;
    }

    private int read(String name) {
      Integer slot = slots.get(name);
      if (slot == null) {
        throw new IllegalArgumentException("'" + name + "' is read before it is assigned");
      }
      return slot;
    }
  }
}
