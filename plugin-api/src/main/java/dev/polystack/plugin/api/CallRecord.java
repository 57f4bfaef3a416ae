package dev.polystack.plugin.api;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One completed call decoded by a {@link ProbeMonitor}: what any traced function has (arguments,
 * return value, error, what it wrote through its pointers, where and when it ran), in the terms
 * of the x86-64 System V calling convention, with no field particular to one kind of function.
 *
 * <p>API 1.4 renamed three components to say what they are in any function: {@code rax} is
 * {@link #returnRegister()}, {@code errno} is {@link #errorName()}, {@code entryRsp} is
 * {@link #entryStackPointer()}. The canonical constructor is unchanged, and the old accessors
 * stay, deprecated, for plug-ins and consumers built against 1.3 or older.
 *
 * @param function traced function
 * @param version its symbol version, or empty
 * @param pid process
 * @param tid thread
 * @param arguments decoded arguments by name, in declaration order; addresses and raw register
 *     values are hexadecimal strings ({@code "0x7ffd..."}), numbers and names as decoded
 * @param returnRegister the raw return-value register as the function left it (rax)
 * @param result the return value as the function's prototype reads it (an {@code int} result is
 *     the sign-extended low half of {@code returnRegister}, whose upper half the ABI leaves
 *     undefined)
 * @param errorName the name of the error the result reports, as the probe plug-in decodes the
 *     function's error convention (an errno name such as {@code EINVAL}), or null for success
 * @param outputs what the function wrote through its pointer arguments (empty when it wrote
 *     nothing, e.g. on error), or null when the memory could not be read: never guessed
 * @param returnAddress where the call returns to
 * @param entryStackPointer the stack pointer at entry, before the function's own code ran (it
 *     points at {@code returnAddress})
 * @param entryNanos CLOCK_MONOTONIC at entry
 * @param exitNanos CLOCK_MONOTONIC at return
 * @since 1.0
 */
public record CallRecord(
    String function,
    String version,
    int pid,
    int tid,
    Map<String, Object> arguments,
    long returnRegister,
    long result,
    String errorName,
    Map<String, Object> outputs,
    long returnAddress,
    long entryStackPointer,
    long entryNanos,
    long exitNanos) {
  public CallRecord {
    Objects.requireNonNull(function, "function");
    Objects.requireNonNull(version, "version");
    // Insertion order is the declaration order of the arguments, which tables keep.
    arguments = Collections.unmodifiableMap(new LinkedHashMap<>(arguments));
    outputs = outputs == null ? null : Collections.unmodifiableMap(new LinkedHashMap<>(outputs));
    if (exitNanos < entryNanos) {
      throw new IllegalArgumentException("call ends before it starts");
    }
  }

  public long durationNanos() {
    return exitNanos - entryNanos;
  }

  /**
   * The raw return register.
   *
   * @deprecated since 1.4: the name of one architecture's register; use {@link
   *     #returnRegister()}, the same value
   */
  @Deprecated(since = "1.4")
  public long rax() {
    return returnRegister;
  }

  /**
   * The error name, or null.
   *
   * @deprecated since 1.4: named after one error convention; use {@link #errorName()}, the
   *     same value
   */
  @Deprecated(since = "1.4")
  public String errno() {
    return errorName;
  }

  /**
   * The stack pointer at entry.
   *
   * @deprecated since 1.4: the name of one architecture's register; use {@link
   *     #entryStackPointer()}, the same value
   */
  @Deprecated(since = "1.4")
  public long entryRsp() {
    return entryStackPointer;
  }
}
