package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * One structure offset or address a plug-in relies on.
 *
 * @param name what it is ({@code cur_L}, {@code GG_G2DISP}, ...)
 * @param value the offset or module virtual address
 * @param provenance how it was found
 * @param detail the specific source: a symbol name, the instruction decoded, the table row
 * @since 1.0
 */
public record DiscoveredOffset(String name, long value, Provenance provenance, String detail) {
  public DiscoveredOffset {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(provenance, "provenance");
    Objects.requireNonNull(detail, "detail");
  }
}
