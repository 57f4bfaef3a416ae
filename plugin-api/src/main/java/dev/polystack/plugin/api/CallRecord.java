package dev.polystack.plugin.api;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One completed call decoded by a {@link ProbeMonitor}.
 *
 * @param function traced function
 * @param version its symbol version, or empty
 * @param pid process
 * @param tid thread
 * @param arguments decoded arguments by name, in declaration order; addresses and raw register
 *     values are hexadecimal strings ({@code "0x7ffd..."}), numbers and names as decoded
 * @param rax the raw return register
 * @param result the return value as the function's prototype reads it (an {@code int} result is
 *     the sign-extended low half of {@code rax}, whose upper half the ABI leaves undefined)
 * @param errno the errno name for a negative result, or null
 * @param outputs what the function wrote through its pointer arguments (empty when it wrote
 *     nothing, e.g. on error), or null when the memory could not be read: never guessed
 * @param returnAddress where the call returns to
 * @param entryRsp stack pointer at entry
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
    long rax,
    long result,
    String errno,
    Map<String, Object> outputs,
    long returnAddress,
    long entryRsp,
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
}
