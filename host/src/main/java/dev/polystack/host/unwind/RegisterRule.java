package dev.polystack.host.unwind;

/** How to recover a caller's register value, after DWARF 5 section 6.4.1. */
sealed interface RegisterRule {

  /** The value is lost (e.g. the return address of the outermost frame). */
  record Undefined() implements RegisterRule {}

  /** The caller's value equals this frame's value. */
  record SameValue() implements RegisterRule {}

  /** Saved in memory at CFA + offset. */
  record Offset(long offset) implements RegisterRule {}

  /** The value is CFA + offset itself. */
  record ValOffset(long offset) implements RegisterRule {}

  /** The value is in another register of this frame. */
  record InRegister(int register) implements RegisterRule {}

  /** Saved in memory at the address an expression computes (CFA pushed first). */
  record Expression(byte[] expression) implements RegisterRule {}

  /** The value is what an expression computes (CFA pushed first). */
  record ValExpression(byte[] expression) implements RegisterRule {}

  RegisterRule UNDEFINED = new Undefined();
  RegisterRule SAME_VALUE = new SameValue();
}
