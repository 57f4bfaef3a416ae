package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * A section header of a module image ({@code .tdata}, {@code .data.rel.ro}, a runtime's own
 * section). {@code address} is a module virtual address, 0 for a section that is not loaded.
 *
 * @param type {@code sh_type}
 * @param flags {@code sh_flags}
 * @since 1.6
 */
public record ModuleSection(String name, int type, long flags, long address, long size) {
  public ModuleSection {
    Objects.requireNonNull(name, "name");
  }
}
