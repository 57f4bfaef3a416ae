package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * One step of a {@link CapturePlan}: plain data the host runs at the sampling tick, in the
 * kernel, for every sample of the process. Steps work on {@link CapturePlan#SLOTS} unsigned
 * 64-bit slots that start at zero. Build plans with {@link CapturePlan#builder()}, which names
 * the slots; these records are what the host compiles.
 *
 * @since 1.1
 */
public sealed interface CaptureStep {

  /** {@code into = register} as the thread had it at the tick (user registers, also in a syscall). */
  record ReadRegister(int into, Register register) implements CaptureStep {
    public ReadRegister {
      CapturePlan.checkSlot(into);
      Objects.requireNonNull(register, "register");
    }
  }

  /** {@code into = value}: something the plug-in learned about this process (e.g. an address). */
  record Constant(int into, long value) implements CaptureStep {
    public Constant {
      CapturePlan.checkSlot(into);
    }
  }

  /**
   * {@code into} = the sampled thread's thread pointer: on x86-64 its FS base, where the C
   * library keeps the thread's own block (glibc's {@code struct pthread}, whose {@code
   * pthread_getspecific} slots and TLS a runtime's current-thread state is reached through).
   * What the kernel saved at the thread's last switch or {@code arch_prctl}; a thread that sets
   * FS with {@code wrfsbase} itself shows its previous value until it is switched out.
   *
   * @since 1.5
   */
  record ThreadPointer(int into) implements CaptureStep {
    public ThreadPointer {
      CapturePlan.checkSlot(into);
    }
  }

  /**
   * {@code into} = the sampled thread's id as its own process sees it ({@code gettid()} in the
   * process's pid namespace, which a runtime stores in its thread state, e.g. CPython's {@code
   * native_thread_id}): with a chain step or a check, a plan finds the thread's own entry in a
   * runtime's list of threads.
   *
   * @since 2.0
   */
  record ThreadId(int into) implements CaptureStep {
    public ThreadId {
      CapturePlan.checkSlot(into);
    }
  }

  /** {@code into = from + addend}. */
  record Add(int into, int from, long addend) implements CaptureStep {
    public Add {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(from);
    }
  }

  /** {@code into = from - minus}. */
  record Subtract(int into, int from, int minus) implements CaptureStep {
    public Subtract {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(from);
      CapturePlan.checkSlot(minus);
    }
  }

  /** {@code into = max(a, b)}, unsigned. */
  record Max(int into, int a, int b) implements CaptureStep {
    public Max {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(a);
      CapturePlan.checkSlot(b);
    }
  }

  /** {@code into = min(a, b)}, unsigned. */
  record Min(int into, int a, int b) implements CaptureStep {
    public Min {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(a);
      CapturePlan.checkSlot(b);
    }
  }

  /** {@code into = from & mask} (e.g. a tagged pointer's address bits). */
  record And(int into, int from, long mask) implements CaptureStep {
    public And {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(from);
    }
  }

  /**
   * {@code into} = the {@code size}-byte little-endian value at {@code address + offset} in the
   * target, zero-extended. An unreadable address ends the plan (the sample keeps what was
   * captured before, and the stop is counted).
   */
  record Load(int into, int address, long offset, int size) implements CaptureStep {
    public Load {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(address);
      CapturePlan.checkLoadSize(size);
    }
  }

  /** {@code into = from << bits}, {@code bits} 0..63. @since 1.6 */
  record ShiftLeft(int into, int from, int bits) implements CaptureStep {
    public ShiftLeft {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(from);
      CapturePlan.checkShift(bits);
    }
  }

  /** {@code into = from >>> bits} (logical), {@code bits} 0..63. @since 1.6 */
  record ShiftRight(int into, int from, int bits) implements CaptureStep {
    public ShiftRight {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(from);
      CapturePlan.checkShift(bits);
    }
  }

  /** {@code into = from * factor}, modulo 2^64 (e.g. an index times an entry size). @since 1.6 */
  record Multiply(int into, int from, long factor) implements CaptureStep {
    public Multiply {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(from);
    }
  }

  /** {@code into = a + b}, modulo 2^64 (e.g. a base plus a computed offset). @since 1.6 */
  record AddSlots(int into, int a, int b) implements CaptureStep {
    public AddSlots {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(a);
      CapturePlan.checkSlot(b);
    }
  }

  /**
   * {@code into} = the {@code size}-byte little-endian value at {@code base + index * scale +
   * offset}, zero-extended: an array element (a pthread key's slot, a code-cache bucket). An
   * unreadable address ends the plan, as {@link Load} does.
   *
   * @since 1.6
   */
  record LoadIndexed(int into, int base, int index, int scale, long offset, int size)
      implements CaptureStep {
    public LoadIndexed {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(base);
      CapturePlan.checkSlot(index);
      if (scale < 1 || scale > CapturePlan.MAX_SCALE) {
        throw new IllegalArgumentException(
            "index scale must be 1.." + CapturePlan.MAX_SCALE + ", got " + scale);
      }
      CapturePlan.checkLoadSize(size);
    }
  }

  /**
   * Follows a chain of records (frames linked by a previous pointer, a list of thread states):
   * starting at the address in {@code start}, for at most {@code maxHops} records, copies
   * {@code copyBytes} from {@code record + copyOffset} as a region (as {@link Copy} does, page by
   * page), then reads the 8-byte pointer at {@code record + nextOffset} and goes on there. It
   * ends early at a pointer of 0 or above user space, or at an unreadable next pointer; it never
   * ends the plan. {@code into} = the address the chain would have gone to next (0 when it
   * reached its end), so a second chain step can go on from there.
   *
   * @param label what each record holds, for counters and diagnostics ({@code py_frame})
   * @since 1.6
   */
  record Chain(int into, int start, long copyOffset, int copyBytes, int nextOffset, int maxHops,
      String label) implements CaptureStep {
    public Chain {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(start);
      if (copyBytes < 1 || copyBytes > CapturePlan.MAX_CHAIN_COPY_BYTES) {
        throw new IllegalArgumentException("chain copy must be 1.."
            + CapturePlan.MAX_CHAIN_COPY_BYTES + " bytes per record, got " + copyBytes);
      }
      if (maxHops < 1 || maxHops > CapturePlan.MAX_CHAIN_HOPS) {
        throw new IllegalArgumentException(
            "chain hops must be 1.." + CapturePlan.MAX_CHAIN_HOPS + ", got " + maxHops);
      }
      CapturePlan.checkLabel(label);
    }
  }

  /**
   * {@code into = value} if {@code low <= value < high} (unsigned), else {@code into} keeps
   * what it held: how a plan uses a register only when it points where it should.
   */
  record KeepIfInRange(int into, int value, int low, int high) implements CaptureStep {
    public KeepIfInRange {
      CapturePlan.checkSlot(into);
      CapturePlan.checkSlot(value);
      CapturePlan.checkSlot(low);
      CapturePlan.checkSlot(high);
    }
  }

  /** Ends the plan unless {@code a == b} (or, with {@code equal} false, unless they differ). */
  record Check(int a, int b, boolean equal) implements CaptureStep {
    public Check {
      CapturePlan.checkSlot(a);
      CapturePlan.checkSlot(b);
    }
  }

  /**
   * Copies target memory from {@code address + offset}: {@code maxBytes}, or the value of
   * {@code length} when it is smaller ({@code length} -1 for none). The copy is page by page and
   * stops at the first unreadable page; it never ends the plan. The walk then reads these bytes
   * as they were at the tick.
   *
   * @param label what the region holds, for counters and diagnostics ({@code lua_stack})
   */
  record Copy(int address, long offset, int length, int maxBytes, String label)
      implements CaptureStep {
    public Copy {
      CapturePlan.checkSlot(address);
      if (length != -1) {
        CapturePlan.checkSlot(length);
      }
      if (maxBytes < 1 || maxBytes > CapturePlan.MAX_COPY_BYTES) {
        throw new IllegalArgumentException(
            "copy must be 1.." + CapturePlan.MAX_COPY_BYTES + " bytes, got " + maxBytes);
      }
      CapturePlan.checkLabel(label);
    }
  }
}
