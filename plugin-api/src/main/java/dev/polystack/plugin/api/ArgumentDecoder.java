package dev.polystack.plugin.api;

import java.util.List;

/**
 * Names and decodes the arguments and the return value of one function, for probe sites the
 * host places itself ({@code polystack probe --monitor args}): a {@link ProbePlugin} offers one
 * through {@link ProbePlugin#argumentDecoder}.
 *
 * <p>A decoder gets only the registers the kernel recorded: the argument registers at the
 * entry and the return register at the return. Nothing they point at was recorded, and the
 * target has run on by the time a decoder runs, so memory at the hit can never be read
 * afterwards: a pointer is decoded as its address, a string argument as its address, a
 * structure passed by pointer not at all. For what a function wrote through its pointers, plan
 * the function's own probes with copies at the return ({@link ProbeExit}).
 *
 * <p>The host calls a decoder from one thread at a time, once per recorded hit: keep it fast,
 * bounded and free of side effects, and decode every register value, whatever it holds (the
 * target may pass garbage). An exception or an invalid answer is not fatal: the host counts it
 * ({@code decode_failed}) and shows that hit's raw registers instead.
 *
 * @since 1.7
 */
public interface ArgumentDecoder {

  /** The most arguments a decoded call has, registers split into several names included. */
  int MAX_ARGUMENTS = 12;

  /**
   * The call's arguments by name, in declaration order: at most {@value #MAX_ARGUMENTS},
   * distinct names. A function without parameters has none.
   */
  List<DecodedArgument> arguments(ArgumentRegisters entry);

  /**
   * The call's result from the raw return register ({@code rax}; an {@code int} result is its
   * sign-extended low half, the upper half is undefined by the ABI).
   */
  DecodedReturn returnValue(long returnRegister);
}
