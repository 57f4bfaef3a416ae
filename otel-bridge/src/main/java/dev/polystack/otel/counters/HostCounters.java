package dev.polystack.otel.counters;

import static dev.polystack.otel.counters.CounterKind.CAPTURE_FIGURE;
import static dev.polystack.otel.counters.CounterKind.ERROR_FRAME;
import static dev.polystack.otel.counters.CounterKind.LOSS;
import static dev.polystack.otel.counters.CounterKind.NOTE;
import static dev.polystack.otel.counters.LossGroup.ALLOCATIONS;
import static dev.polystack.otel.counters.LossGroup.BUSY;
import static dev.polystack.otel.counters.LossGroup.COULD_NOT_SAMPLE;
import static dev.polystack.otel.counters.LossGroup.LEARNING;
import static dev.polystack.otel.counters.LossGroup.NONE;
import static dev.polystack.otel.counters.LossGroup.STACK_UNREADABLE;
import static dev.polystack.otel.counters.LossGroup.THREADS_GONE;

import java.util.List;
import java.util.Map;

/**
 * Every counter the host emits, declared once. The summary, {@code --stats-json}, file headers,
 * OTLP metrics and the table in docs/operations.md are derived from these declarations
 * ({@link CounterTable} writes the table).
 */
public final class HostCounters {
  private HostCounters() {}

  // Samples missing: while polystack was busy.
  public static final Counter LATE_TICK = loss("late_tick", BUSY, "tick",
      "A tick not taken because the sampling loop fell behind; its time is carried by the"
          + " thread's next sample.");
  public static final Counter QUEUE_FULL = loss("queue_full", BUSY, "sample",
      "A sample dropped because the queue to the naming thread was full.");
  public static final Counter SAMPLE_STORE_FULL = loss("sample_store_full", BUSY, "sample",
      "A sample dropped because the recording's store reached its bound.");
  public static final Counter BPF_RING_FULL = loss("bpf_ring_full", BUSY, "record",
      "A tick record the bpf ring had no room for (kernel counter ring_full), or one beyond a"
          + " process's queue of unread records.");
  public static final Counter RING_LOST = loss("ring_lost", BUSY, "record",
      "Records the kernel dropped because a perf ring was full (PERF_RECORD_LOST).");
  public static final Counter THROTTLED = loss("throttled", BUSY, "event",
      "The kernel's sample-rate limit paused an event (PERF_RECORD_THROTTLE).");

  // Samples missing: threads gone.
  public static final Counter THREAD_GONE = loss("thread_gone", THREADS_GONE, "sample",
      "The thread exited between the tick and its sample.");
  // Samples missing: while learning a thread's stack.
  public static final Counter LEARNING_WALK = loss("learning_walk", LEARNING, "sample",
      "A sample whose walk learned which pages the thread's runtime reads; not kept, its time"
          + " is carried by the thread's next sample.");
  public static final Counter READ_AFTER_RESUME = loss("read_after_resume", LEARNING, "read",
      "A read of a walk that went to the running target after it was resumed (ptrace mode).");

  // Samples missing: stack unreadable.
  public static final Counter STACK_COPY_FAILED = loss("stack_copy_failed", STACK_UNREADABLE,
      "sample", "The copy of a stopped thread's stack failed (ptrace mode).");
  public static final Counter WALK_PAGE_MISSED = loss("walk_page_missed", STACK_UNREADABLE,
      "sample", "A walk needed a page the stack copy lacked; dropped rather than read racily.");
  public static final Counter NO_USER_REGS = loss("no_user_regs", STACK_UNREADABLE, "sample",
      "A perf sample with no user registers (the tick landed in the kernel with no user"
          + " context).");
  public static final Counter BPF_NO_USER_REGS = loss("bpf_no_user_regs", STACK_UNREADABLE,
      "tick", "A tick the bpf capture saw with no user registers (kernel counter"
          + " no_user_regs).");
  public static final Counter MALFORMED_RECORD = loss("malformed_record", STACK_UNREADABLE,
      "record", "A ring record that failed validation and was dropped.");
  public static final Counter CAPTURE_PLAN_REFUSED = loss("capture_plan_refused",
      STACK_UNREADABLE, "plan install", "A runtime's capture plan not run at the tick: the"
          + " kernel refused it, or it was beyond the 3 plug-in plans a process runs (each such"
          + " plan counted once); its samples are read live, as in perf mode.");
  public static final Counter RACED_EVENT = loss("raced_event", STACK_UNREADABLE, "sample",
      "Another stop (a signal, a clone) came before the sampling interrupt (ptrace mode).");
  public static final Counter STOP_TIMEOUT = loss("stop_timeout", STACK_UNREADABLE, "sample",
      "The thread did not stop within 20 ms (uninterruptible sleep; ptrace mode).");

  // Samples missing: polystack could not sample.
  public static final Counter PERF_OPEN_FAILED = loss("perf_open_failed", COULD_NOT_SAMPLE,
      "thread", "perf_event_open failed for a thread; it is not sampled (perf mode).");
  public static final Counter REFRESH_FAILED = loss("refresh_failed", COULD_NOT_SAMPLE,
      "refresh", "Re-reading the target's memory map failed.");
  public static final Counter DETACH_FAILED = loss("detach_failed", COULD_NOT_SAMPLE, "thread",
      "A thread could not be detached; the kernel detaches it when polystack exits.");
  public static final Counter EXPORT_HOOK_FAILED = loss("export_hook_failed", COULD_NOT_SAMPLE,
      "sample", "Samples an interval's export (OTLP) did not take because it failed.");
  public static final Counter CAPTURE_COUNTERS_UNREADABLE = loss("capture_counters_unreadable",
      COULD_NOT_SAMPLE, "read", "The bpf capture's kernel counters could not be read; its"
          + " losses in the kernel are unknown for that read.");
  public static final Counter EXPORT_SAMPLES_DROPPED = loss("export_samples_dropped",
      COULD_NOT_SAMPLE, "sample", "Samples that did not reach the OTLP receiver.");

  // What the bpf tick capture did (kernel counters, capture_<kernel name>): not losses.
  public static final Counter CAPTURE_TICKS = capture("capture_ticks", "tick",
      "Ticks of the target's threads the capture program ran on.");
  public static final Counter CAPTURE_RECORDS = capture("capture_records", "record",
      "Records the capture program wrote to the ring.");
  public static final Counter CAPTURE_STACK_UNREADABLE = capture("capture_stack_unreadable",
      "record", "Records whose user stack could not be copied at the tick.");
  public static final Counter CAPTURE_PLAN_LOAD_FAILED = capture("capture_plan_load_failed",
      "plan run", "Runs of a capture plan that stopped at a load that faulted.");
  public static final Counter CAPTURE_PLAN_CHECK_FAILED = capture("capture_plan_check_failed",
      "plan run", "Runs of a capture plan that stopped at a check that did not hold.");
  public static final Counter CAPTURE_COPY_FAILED = capture("capture_copy_failed", "copy",
      "Copies of a capture plan that got nothing.");
  public static final Counter CAPTURE_COPY_PARTIAL = capture("capture_copy_partial", "copy",
      "Copies of a capture plan that stopped at an unreadable page.");
  public static final Counter CAPTURE_RECORD_FULL = capture("capture_record_full", "copy",
      "Copies cut short because the record had no room left.");
  public static final Counter CAPTURE_CHAIN_NEXT_UNREADABLE = capture(
      "capture_chain_next_unreadable", "chain",
      "Chain steps of a capture plan that ended at a next pointer they could not read.");
  public static final Counter CAPTURE_PLAN_INVALID = capture("capture_plan_invalid",
      "plan run", "Runs of a capture plan stopped at a step the program found invalid.");
  public static final Counter CAPTURE_LIVE_READ_SAMPLES = capture("capture_live_read_samples",
      "sample", "Samples whose walk read memory after the tick because no plan had copied it.");
  public static final Counter CAPTURE_KEPT_PAGE_READS = capture("capture_kept_page_reads",
      "page", "Pages of code objects a walk read as last seen, the process having exited or run"
          + " another program before its record was walked.");
  public static final Counter CAPTURE_AFTER_EXEC_WALKS = capture("capture_after_exec_walks",
      "sample", "Samples of a program whose process ran another before the record was walked:"
          + " walked from the tick's copies and the pages last read, never from the next"
          + " program's memory.");
  public static final Counter CAPTURE_PLANS = capture("capture_plans", "plan",
      "Capture plans installed at the end of the run.");

  public static final Counter PROCESS_GONE = loss("process_gone", THREADS_GONE, "sample",
      "Ticks of a process that exited (or could not be read) before the agent described it.");
  public static final Counter BPF_THREAD_EXITING = loss("bpf_thread_exiting", THREADS_GONE,
      "tick", "A tick of a thread in its exit, whose user memory is being torn down: not"
          + " captured (kernel counter thread_exiting).");
  public static final Counter INTERVAL_FULL = loss("interval_full", BUSY, "sample",
      "Samples past the bound of one agent interval (262,144 over every process).");
  public static final Counter SELECT_FAILED = loss("select_failed", COULD_NOT_SAMPLE, "process",
      "A process the agent's selection names that the capture could not add.");
  public static final Counter PROCESS_NOT_FOLLOWED = loss("process_not_followed",
      COULD_NOT_SAMPLE, "process", "A process created by a followed one that the kernel could"
          + " not add as a target (its map of targets was full).");
  public static final Counter CAPTURE_EVENTS = capture("capture_events", "event",
      "Process events (exec, exit, followed fork) the capture reported.");
  public static final Counter CAPTURE_EVENT_RING_FULL = capture("capture_event_ring_full",
      "event", "Process events lost to a full ring; the agent then checks idle processes"
          + " against their identity.");
  public static final Counter CAPTURE_FOLLOWED = capture("capture_followed", "process",
      "Processes the kernel added as targets at their fork (record --subprocesses, agent"
          + " selections by name).");

  // Allocation profiles (record --event alloc): the kernel's counters, then the host's.
  public static final Counter CAPTURE_ALLOC_CALLS = capture("capture_alloc_calls", "call",
      "Calls of a probed allocator function by a target (each pays the uprobe trap).");
  public static final Counter CAPTURE_ALLOC_SAMPLED = capture("capture_alloc_sampled", "call",
      "Allocations the byte countdown sampled.");
  public static final Counter CAPTURE_ALLOC_INTERNAL_CALL = capture("capture_alloc_internal_call",
      "call", "Probed calls made by the allocator itself (realloc's malloc), not counted again.");
  public static final Counter CAPTURE_ALLOC_DEFINITION_SENT = capture(
      "capture_alloc_definition_sent", "stack", "Allocation stacks sent to the host.");
  public static final Counter CAPTURE_ALLOC_DEFINITION_DEDUPLICATED = capture(
      "capture_alloc_definition_deduplicated", "sample",
      "Sampled allocations whose stack the host already had (sent once per digest).");
  public static final Counter CAPTURE_ALLOC_DEFINITION_UNDEDUPLICATED = capture(
      "capture_alloc_definition_undeduplicated", "sample",
      "Sampled allocations whose stack was sent without a digest (a runtime's plan ran, or the"
          + " process's ranges were not known yet).");
  public static final Counter CAPTURE_ALLOC_INTERVAL_CLAMPED = capture(
      "capture_alloc_interval_clamped", "sample",
      "Allocations larger than four drawn gaps: the countdown restarted from a fresh gap.");
  public static final Counter CAPTURE_FREE_MATCHED = capture("capture_free_matched", "call",
      "Frees of a sampled block (the in-use view's frees).");
  public static final Counter ALLOC_DEFINITION_LOST = loss("alloc_definition_lost", ALLOCATIONS,
      "stack", "Allocation stacks lost to a full ring (kernel counter); retried at the next"
          + " sample of that stack.");
  public static final Counter ALLOC_EVENT_RING_FULL = loss("alloc_event_ring_full", ALLOCATIONS,
      "record", "Allocation or free records lost to a full ring (kernel counter).");
  public static final Counter INUSE_MAP_FULL = loss("inuse_map_full", ALLOCATIONS, "block",
      "Sampled blocks the kernel's live map had no room for: counted as allocated, never as"
          + " in use.");
  public static final Counter ALLOC_RETURN_UNMATCHED = loss("alloc_return_unmatched",
      ALLOCATIONS, "sample", "Sampled allocations whose return was not paired with their entry.");
  public static final Counter ALLOC_DIGEST_UNKNOWN = loss("alloc_digest_unknown", ALLOCATIONS,
      "sample", "Sampled allocations whose stack never arrived (shown under"
          + " allocation_stack_lost).");
  public static final Counter ALLOC_RANGES_REFUSED = loss("alloc_ranges_refused", ALLOCATIONS,
      "update", "The kernel refused a process's code ranges after its mappings changed: stack"
          + " digests keep the previous ranges until the next change.");
  public static final Counter ALLOC_STACK_TABLE_FULL = loss("alloc_stack_table_full",
      ALLOCATIONS, "sample", "Sampled allocations past the host's bound of distinct stacks.");
  public static final Counter ALLOC_LIVE_TABLE_FULL = loss("alloc_live_table_full", ALLOCATIONS,
      "block", "Sampled blocks past the host's bound of live blocks: never counted as in use.");
  public static final Counter ALLOC_PROCESS_UNPROBED = loss("alloc_process_unprobed",
      ALLOCATIONS, "process", "A process the agent (--event alloc) could not probe: no C"
          + " library allocator found in its modules, or the kernel refused its link; it is"
          + " described, without allocations.");
  public static final Counter ALLOC_SITE_REFUSED = loss("alloc_site_refused", ALLOCATIONS,
      "site", "A runtime's allocator function (named by its plug-in) that could not be probed:"
          + " not in a file-backed module, past the bound of 16 sites, or refused by the kernel;"
          + " the allocations made through it are not seen.");

  public static final Counter PROCESSES_NOT_DESCRIBED = note("processes_not_described",
      "process", "Processes the agent was told of (an exec, a fork) that were gone or"
          + " unreadable before it read their memory map.");
  public static final Counter PROCESS_EVICTED = note("process_evicted", "process",
      "Processes the agent let go, idle for a minute or to stay within 1024 described at once;"
          + " described again if they run.");

  // The target's own CPU time, read from /proc (not from polystack's samples): the on-CPU rate.
  public static final Counter TARGET_CPU_NS = note("target_cpu_ns", "ns",
      "CPU time the sampled threads used during the run, from /proc/PID/task/TID/schedstat (or"
          + " the process's utime+stime when threads exited); with target_cpu_samples, the"
          + " on-CPU rate.");
  public static final Counter TARGET_CPU_SAMPLES = note("target_cpu_samples", "sample",
      "Samples taken while target_cpu_ns was measured (the whole run unless the target exited"
          + " between two readings of its CPU time).");

  // How polystack read the target: not losses.
  public static final Counter SAMPLE_TIMES_MERGED = note("sample_times_merged", "sample",
      "Samples kept with their stack and thread but merged with another's time because the"
          + " store was at its bound.");
  public static final Counter MODULE_NOT_ELF = note("module_not_elf", "module",
      "A mapped file that is not an ELF file; its frames show as module+offset.");
  public static final Counter MODULE_REPLACED = note("module_replaced", "module",
      "A mapped file replaced on disk since it was mapped; its frames show as module+offset.");
  public static final Counter MODULE_UNREADABLE = note("module_unreadable", "module",
      "A mapped file that could not be opened or read; its frames show as module+offset.");
  public static final Counter MODULE_DELETED = note("module_deleted", "module",
      "A mapped file deleted after the process mapped it; its frames show as module+offset.");
  public static final Counter MODULE_BAD_VDSO = note("module_bad_vdso", "module",
      "A [vdso] mapping of an implausible size; its frames show as module+offset.");
  public static final Counter MODULE_OVER_CAP = note("module_over_cap", "module",
      "A module beyond the cap of open modules; its frames show as module+offset.");
  public static final Counter MODULE_NOT_RECORDED = note("module_not_recorded", "module",
      "A module a snapshot did not record; its frames show as module+offset.");
  public static final Counter SYMBOLS_UNREADABLE = note("symbols_unreadable", "module",
      "A module whose symbol tables were refused (over the bounds or malformed).");
  public static final Counter DEBUG_FILE_SYMLINK = note("debug_file_symlink", "file",
      "A separate debug file refused because it is a symbolic link.");
  public static final Counter DEBUG_FILE_NOT_REGULAR = note("debug_file_not_regular", "file",
      "A separate debug file refused because it is not a regular file.");
  public static final Counter DEBUG_FILE_MISMATCH = note("debug_file_mismatch", "file",
      "A separate debug file refused because neither its build id nor its CRC32 matches.");
  public static final Counter DEBUG_FILE_UNREADABLE = note("debug_file_unreadable", "file",
      "A separate debug file that could not be read.");
  public static final Counter EXPORT_REQUESTS_FAILED = note("export_requests_failed", "request",
      "Profile export requests that failed.");
  public static final Counter EXPORT_PROFILES_REJECTED = note("export_profiles_rejected",
      "profile", "Profiles the OTLP receiver rejected (partial success).");

  // Error frames of the native unwinder ([error: REASON]), by UnwindError's reason.
  public static final Counter NO_MODULE = error("no_module",
      "The PC lies in no known module and no frame pointer led on (often: the map changed).");
  public static final Counter MAX_DEPTH = error("max_depth", "The walk reached the depth limit.");
  public static final Counter STACK_NOT_GROWING = error("stack_not_growing",
      "A step gave a caller stack pointer not above the frame's: a loop or garbage.");
  public static final Counter STACK_READ_FAILED = error("stack_read_failed",
      "Reading the target's stack (a saved register, the frame-pointer chain) failed.");
  public static final Counter NO_FDE = error("no_fde", "The module has no CFI for the PC.");
  public static final Counter BAD_CFI = error("bad_cfi",
      "The module's CFI sections could not be parsed.");
  public static final Counter CFI_BAD_CFA = error("cfi_bad_cfa", "A CFA rule that cannot be"
      + " evaluated.");
  public static final Counter CFI_BAD_LEB128 = error("cfi_bad_leb128",
      "A malformed LEB128 number in the CFI.");
  public static final Counter CFI_BAD_OPCODE = error("cfi_bad_opcode",
      "An unknown call frame instruction.");
  public static final Counter CFI_BAD_RESTORE = error("cfi_bad_restore",
      "A restore instruction with no initial rule to restore.");
  public static final Counter CFI_BAD_SET_LOC = error("cfi_bad_set_loc",
      "A set_loc instruction that moves backwards or out of the FDE.");
  public static final Counter CFI_NO_CFA = error("cfi_no_cfa", "No CFA rule at the PC.");
  public static final Counter CFI_NO_RETURN_ADDRESS = error("cfi_no_return_address",
      "No rule for the return address at the PC.");
  public static final Counter CFI_OUT_OF_BOUNDS = error("cfi_out_of_bounds",
      "CFI that points outside its section.");
  public static final Counter CFI_STATE_OVERFLOW = error("cfi_state_overflow",
      "Too many remembered CFI states.");
  public static final Counter CFI_STATE_UNDERFLOW = error("cfi_state_underflow",
      "A restore_state with no remembered state.");
  public static final Counter CFI_TOO_LONG = error("cfi_too_long",
      "CFI instructions beyond the evaluation bound.");
  public static final Counter CFI_TRUNCATED = error("cfi_truncated",
      "CFI instructions cut short by the end of their entry.");
  public static final Counter CFI_UNKNOWN_REGISTER = error("cfi_unknown_register",
      "A rule for a register the unwinder does not track.");
  public static final Counter DWARF_EXPR_DIV_ZERO = error("dwarf_expr_div_zero",
      "A DWARF expression divided by zero.");
  public static final Counter DWARF_EXPR_EMPTY = error("dwarf_expr_empty",
      "A DWARF expression that left nothing on its stack.");
  public static final Counter DWARF_EXPR_OVERFLOW = error("dwarf_expr_overflow",
      "A DWARF expression's stack overflowed.");
  public static final Counter DWARF_EXPR_TOO_LONG = error("dwarf_expr_too_long",
      "A DWARF expression beyond the evaluation bound.");
  public static final Counter DWARF_EXPR_UNDERFLOW = error("dwarf_expr_underflow",
      "A DWARF expression popped an empty stack.");
  public static final Counter DWARF_EXPR_UNSUPPORTED = error("dwarf_expr_unsupported",
      "A DWARF expression operation the unwinder does not evaluate.");

  /** The bpf capture's kernel counters that are losses, by the kernel's name. */
  private static final Map<String, Counter> KERNEL_LOSSES = Map.of(
      "ring_full", BPF_RING_FULL, "no_user_regs", BPF_NO_USER_REGS,
      "follow_full", PROCESS_NOT_FOLLOWED, "ring_lost", RING_LOST,
      "perf_no_user_regs", NO_USER_REGS, "alloc_definition_lost", ALLOC_DEFINITION_LOST,
      "alloc_event_ring_full", ALLOC_EVENT_RING_FULL, "inuse_map_full", INUSE_MAP_FULL,
      "alloc_return_unmatched", ALLOC_RETURN_UNMATCHED, "thread_exiting", BPF_THREAD_EXITING);

  private static final CounterRegistry REGISTRY = CounterRegistry.of(HostCounters.class);

  /** Every declaration above, in the order declared. */
  public static List<Counter> all() {
    return REGISTRY.all();
  }

  /** The declarations above as a registry: how a record's counters are looked up. */
  public static CounterRegistry registry() {
    return REGISTRY;
  }

  /**
   * The counter of one of the bpf capture's kernel counters (lower_snake, as TickCapture reports
   * them): a loss for the two that are ({@code ring_full}, {@code no_user_regs}), else the
   * capture figure {@code capture_<key>}; one no declaration names comes back undeclared, so
   * the summary still counts it ({@link Counters#classify}).
   */
  public static Counter kernel(String key) {
    Counter loss = KERNEL_LOSSES.get(key);
    return loss != null ? loss : Counters.classify(Counters.CAPTURE_PREFIX + key);
  }

  /** A module that could not be opened, by ModuleOpenException's reason. */
  public static Counter moduleNotOpened(String reason) {
    return Counters.classify("module_" + reason);
  }

  /** A separate debug file refused, by DebugFiles' reason. */
  public static Counter debugFileRefused(String reason) {
    return Counters.classify("debug_file_" + reason);
  }

  private static Counter loss(String name, LossGroup group, String unit, String description) {
    return new Counter(name, LOSS, group, unit, description);
  }

  private static Counter capture(String name, String unit, String description) {
    return new Counter(name, CAPTURE_FIGURE, NONE, unit, description);
  }

  private static Counter note(String name, String unit, String description) {
    return new Counter(name, NOTE, NONE, unit, description);
  }

  private static Counter error(String name, String description) {
    return new Counter(name, ERROR_FRAME, NONE, "stack", description);
  }
}
