package dev.polystack.host.unwind;

/**
 * Why a native walk ended before the outermost frame. {@link #reason()} is the external name:
 * the error frame's name ({@code [error: no_module]}) and the key of its counter in -v and
 * --stats-json output, so it never changes with the constant's name.
 */
public enum UnwindError {
  /** The PC lies in no known module and no frame pointer led on (often: the map changed). */
  NO_MODULE("no_module"),
  /** The walk reached the depth limit. */
  MAX_DEPTH("max_depth"),
  /** A CFI step gave a caller stack pointer not above the frame's: a loop or garbage. */
  STACK_NOT_GROWING("stack_not_growing"),
  /** Reading the target's stack (a saved register, the frame pointer chain) failed. */
  STACK_READ_FAILED("stack_read_failed"),
  /** The module has no CFI for the PC. */
  NO_FDE("no_fde"),
  /** The module's CFI sections could not be parsed. */
  BAD_CFI("bad_cfi"),
  CFI_BAD_CFA("cfi_bad_cfa"),
  CFI_BAD_LEB128("cfi_bad_leb128"),
  CFI_BAD_OPCODE("cfi_bad_opcode"),
  CFI_BAD_RESTORE("cfi_bad_restore"),
  CFI_BAD_SET_LOC("cfi_bad_set_loc"),
  CFI_NO_CFA("cfi_no_cfa"),
  CFI_NO_RETURN_ADDRESS("cfi_no_return_address"),
  CFI_OUT_OF_BOUNDS("cfi_out_of_bounds"),
  CFI_STATE_OVERFLOW("cfi_state_overflow"),
  CFI_STATE_UNDERFLOW("cfi_state_underflow"),
  CFI_TOO_LONG("cfi_too_long"),
  CFI_TRUNCATED("cfi_truncated"),
  CFI_UNKNOWN_REGISTER("cfi_unknown_register"),
  DWARF_EXPR_DIV_ZERO("dwarf_expr_div_zero"),
  DWARF_EXPR_EMPTY("dwarf_expr_empty"),
  DWARF_EXPR_OVERFLOW("dwarf_expr_overflow"),
  DWARF_EXPR_TOO_LONG("dwarf_expr_too_long"),
  DWARF_EXPR_UNDERFLOW("dwarf_expr_underflow"),
  DWARF_EXPR_UNSUPPORTED("dwarf_expr_unsupported");

  private final String reason;

  UnwindError(String reason) {
    this.reason = reason;
  }

  /** The external name: error frame and counter key. */
  public String reason() {
    return reason;
  }
}
