package dev.polystack.otel.counters;

import static dev.polystack.otel.counters.CounterKind.LOSS;
import static dev.polystack.otel.counters.CounterKind.NOTE;
import static dev.polystack.otel.counters.LossGroup.BUSY;
import static dev.polystack.otel.counters.LossGroup.COULD_NOT_SAMPLE;
import static dev.polystack.otel.counters.LossGroup.NONE;
import static dev.polystack.otel.counters.LossGroup.NOT_ARMED;
import static dev.polystack.otel.counters.LossGroup.STACK_UNREADABLE;
import static dev.polystack.otel.counters.LossGroup.THREADS_GONE;
import static dev.polystack.otel.counters.LossGroup.UNPAIRED;

import java.util.List;

/**
 * Every counter of a vDSO trace session ({@code polystack vdso}: the session summary's
 * {@code counters}, the {@code polystack.vdso.records.lost} metric), declared once: the probe
 * backends', the bpf trace program's (kernel counters, by their lower_snake name), the
 * session's and the vDSO plug-in's call pairing's. A loss is a call that was not recorded.
 * {@link CounterTable} writes the table in docs/vdso.md.
 */
public final class TraceCounters {
  private TraceCounters() {}

  // Calls not recorded: while polystack was busy.
  public static final Counter RING_LOST = loss("ring_lost", BUSY, "record",
      "Hit records the kernel dropped because the perf ring was full (perf backend).");
  public static final Counter THROTTLED = loss("throttled", BUSY, "event",
      "The kernel's sample-rate limit paused a breakpoint event (perf backend).");
  public static final Counter RING_FULL = loss("ring_full", BUSY, "call",
      "A call record the bpf ring buffer had no room for (bpf backend, kernel counter).");
  public static final Counter PENDING_FULL = loss("pending_full", BUSY, "call",
      "An entry not kept because more calls were in flight than the pending map holds, 16384"
          + " (bpf backend, kernel counter).");
  public static final Counter PENDING_OVERFLOW = loss("pending_overflow", BUSY, "call",
      "The oldest pending entry of a thread dropped because it had 64 calls in flight (call"
          + " pairing).");

  // Calls not recorded: threads gone.
  public static final Counter THREAD_GONE = loss("thread_gone", THREADS_GONE, "hit",
      "A hit of a thread that exited before it could be read (ptrace backend).");

  // Calls not recorded: their stack or registers unreadable.
  public static final Counter MALFORMED_RECORD = loss("malformed_record", STACK_UNREADABLE,
      "record", "A ring record that failed validation and was dropped.");
  public static final Counter NO_USER_REGS = loss("no_user_regs", STACK_UNREADABLE, "hit",
      "A breakpoint sample with no user registers (perf backend).");
  public static final Counter UNREADABLE_RETURN_ADDRESS = loss("unreadable_return_address",
      STACK_UNREADABLE, "call", "The return address on the stack could not be read at the entry"
          + " (ptrace backend): the return cannot be caught.");
  public static final Counter RETURN_ADDRESS_UNREADABLE = loss("return_address_unreadable",
      STACK_UNREADABLE, "call", "The return address on the stack could not be read at the entry"
          + " (bpf backend, kernel counter).");

  // Calls not recorded: polystack could not trace.
  public static final Counter DETACH_FAILED = loss("detach_failed", COULD_NOT_SAMPLE, "thread",
      "A thread could not be detached; the kernel detaches it when polystack exits.");
  public static final Counter PLUGIN_ERROR = loss("plugin_error", COULD_NOT_SAMPLE, "hit",
      "The plug-in threw on a hit; the hit is dropped and the session goes on.");

  // Calls not recorded: breakpoints not armed.
  public static final Counter THREAD_NOT_ARMED = loss("thread_not_armed", NOT_ARMED, "thread",
      "A thread that could not get its breakpoints (e.g. its debug registers are in use).");
  public static final Counter NO_RETURN_SLOT = loss("no_return_slot", NOT_ARMED, "call",
      "A call whose return site got no breakpoint: no debug register is left for returns.");
  public static final Counter RETURN_SLOT_FAILED = loss("return_slot_failed", NOT_ARMED, "call",
      "Arming a call's return site failed.");
  public static final Counter ENTRY_SLOT_NOT_RESTORED = loss("entry_slot_not_restored",
      NOT_ARMED, "thread", "A lent entry slot that could not be moved back (ptrace backend):"
          + " that thread's calls of that function are not traced from then on.");
  public static final Counter EXEC_NOT_RESOLVED = loss("exec_not_resolved", NOT_ARMED,
      "process", "A process that exec'd into an image whose vDSO could not be planned again.");
  public static final Counter NO_SITE = loss("no_site", NOT_ARMED, "hit",
      "A breakpoint hit at an address the session did not declare (bpf backend, kernel"
          + " counter).");

  // Calls not recorded: entry and return not paired.
  public static final Counter RETURN_MISSED = loss("return_missed", UNPAIRED, "call",
      "A call whose return was not seen (the perf backend misses the first return from each"
          + " call site; call pairing).");
  public static final Counter RETURN_WITHOUT_ENTRY = loss("return_without_entry", UNPAIRED,
      "call", "A return whose entry was not seen: a call entered before the session (call pairing).");
  public static final Counter ENTRY_WITHOUT_RETURN_ADDRESS = loss("entry_without_return_address",
      UNPAIRED, "call", "An entry whose return address could not be read from the stack (call pairing).");
  public static final Counter UNFINISHED_AT_THREAD_EXIT = loss("unfinished_at_thread_exit",
      UNPAIRED, "call", "Calls still in flight when their thread exited or exec'd (call pairing).");
  public static final Counter ENTRY_WITHOUT_RETURN = loss("entry_without_return", UNPAIRED,
      "call", "Entries of threads that ended inside a call, or calls still in flight when the"
          + " session ended (bpf backend).");
  public static final Counter UNPAIRED_RETURN = loss("unpaired_return", UNPAIRED, "call",
      "A return without its entry: a call entered before the session started (bpf backend,"
          + " kernel counter).");
  public static final Counter ENTRY_REPLACED = loss("entry_replaced", UNPAIRED, "call",
      "An entry at the same thread and depth as one that never returned, e.g. a longjmp out of"
          + " a signal handler (bpf backend, kernel counter).");

  // Not losses: every call was recorded.
  public static final Counter RETURN_SLOT_RETARGETED = note("return_slot_retargeted", "call",
      "The oldest return-site breakpoint moved to a new return address (all return slots were"
          + " in use).");
  public static final Counter AFTER_MAX_CALLS = note("after_max_calls", "call",
      "Calls completed after --max-calls was reached, not written.");
  public static final Counter OUTPUTS_NOT_CAPTURED = note("outputs_not_captured", "call",
      "A call recorded without its outputs: they could not be read at the return (call"
          + " pairing).");
  public static final Counter OUTPUT_UNREADABLE = note("output_unreadable", "call",
      "A call recorded with outputs null: an output pointer could not be read at the return"
          + " (bpf backend, kernel counter).");
  public static final Counter SIGTRAP_DELIVERED = note("sigtrap_delivered", "signal",
      "Spurious SIGTRAPs the kernel raised in the target for a breakpoint (bpf backend; see"
          + " Spurious SIGTRAPs).");
  public static final Counter SPURIOUS_SIGTRAP = note("spurious_sigtrap", "signal",
      "Spurious SIGTRAPs suppressed before the target saw them (ptrace backend).");
  public static final Counter EXEC = note("exec", "exec",
      "The process exec'd: the new image's calls were untraced until re-armed (bpf backend,"
          + " kernel counter).");

  private static final CounterRegistry REGISTRY = CounterRegistry.of(TraceCounters.class);

  /** Every declaration above, in the order declared. */
  public static List<Counter> all() {
    return REGISTRY.all();
  }

  /** The declarations above as a registry: how a trace session's counters are looked up. */
  public static CounterRegistry registry() {
    return REGISTRY;
  }

  private static Counter loss(String name, LossGroup group, String unit, String description) {
    return new Counter(name, LOSS, group, unit, description);
  }

  private static Counter note(String name, String unit, String description) {
    return new Counter(name, NOTE, NONE, unit, description);
  }
}
