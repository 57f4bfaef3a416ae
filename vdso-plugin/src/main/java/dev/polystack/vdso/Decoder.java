package dev.polystack.vdso;

import dev.polystack.plugin.api.ProbeExit;
import dev.polystack.plugin.api.Registers;
import java.util.List;
import java.util.Map;

/**
 * Knows one vDSO function's prototype: names its arguments, reads its result at the width the
 * prototype declares and decodes what it wrote through its pointer arguments.
 */
interface Decoder {

  /** Arguments by name, in declaration order, from the registers at entry. */
  Map<String, Object> arguments(Registers entry);

  /** The result from raw rax: an {@code int} is the sign-extended low half. */
  long result(long rax);

  /** The errno name of a failed call, or null. */
  default String errno(long result) {
    return Errno.nameOfResult(result);
  }

  /**
   * What the call wrote: empty when it wrote nothing (an error, a NULL pointer), null when the
   * written memory was not captured.
   */
  Map<String, Object> outputs(Registers entry, long result, OutputReader memory);

  /**
   * What {@link #outputs} reads, for backends that copy it at the return without stopping the
   * thread (the plan's {@code ProbeExit}): the same pointers and lengths.
   */
  default List<ProbeExit.OutputCopy> copies() {
    return List.of();
  }
}
