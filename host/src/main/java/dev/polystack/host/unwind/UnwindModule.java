package dev.polystack.host.unwind;

/** A mapped module as the unwinder sees it: where it is and its CFI rows. */
public interface UnwindModule {

  /** Runtime address minus link-time address. */
  long bias();

  /** File path or pseudo name, for error frames and counters. */
  String name();

  /**
   * The CFI row for a link-time PC.
   *
   * @throws CfiException with reason {@code no_fde} when the module has no CFI for the PC
   */
  UnwindRow row(long linkTimePc) throws CfiException;
}
