package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * One place to break.
 *
 * @param function the traced function's name
 * @param version its symbol version, or empty
 * @param address module virtual address of the instruction to break on
 * @param kind entry or return
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
