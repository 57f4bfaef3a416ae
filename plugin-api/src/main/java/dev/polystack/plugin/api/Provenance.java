package dev.polystack.plugin.api;

/**
 * Where a discovered offset came from, from most to least authoritative.
 *
 * @since 1.0
 */
public enum Provenance {
  /** A note or table the runtime ships to describe itself. */
  SELF_DESCRIPTION,
  /** A symbol's address or size. */
  SYMBOL,
  /**
   * The unwind tables the compiler emitted ({@code .eh_frame}, {@code .debug_frame}): a function's
   * range from its FDE, for code no symbol covers.
   *
   * @since 1.3
   */
  UNWIND_TABLE,
  /** Decoding instructions of a public function. */
  DISASSEMBLY,
  /** Checked against a live process (pointers that must agree did). */
  RUNTIME_VALIDATION,
  /** A table of known values per version, used when nothing else answers. */
  BUILTIN_TABLE
}
