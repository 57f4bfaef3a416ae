package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * One place to break.
 *
 * @param function the traced function's name
 * @param version its symbol version, or empty
 * @param address the instruction to break on: a module virtual address for an ENTRY site as
 *     planned; for a RETURN site, which a backend learns at run time from the return address on
 *     the stack at entry, the absolute address in the target
 * @param kind entry or return
 * @since 1.0
 */
public record ProbeSite(String function, String version, long address, Kind kind) {

  public enum Kind {
    ENTRY,
    RETURN
  }

  public ProbeSite {
    Objects.requireNonNull(function, "function");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(kind, "kind");
  }
}
