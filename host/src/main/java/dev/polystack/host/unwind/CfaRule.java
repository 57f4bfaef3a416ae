package dev.polystack.host.unwind;

/** How to compute the canonical frame address of a row. */
sealed interface CfaRule {

  /** CFA = register + offset; by far the common case. */
  record RegisterOffset(int register, long offset) implements CfaRule {}

  /** CFA = value of a DWARF expression (PLT stubs, signal trampolines). */
  record Expression(byte[] expression) implements CfaRule {}
}
